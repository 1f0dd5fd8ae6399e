// Package doctest runs the shell blocks of admitc's Markdown documents, so
// the commands in README.md and docs/*.md cannot rot.
//
// A block runs when its fence's info string is "sh test" (offline, run by
// `go test ./docs`) or "sh e2e" (needs the e2e API server; run by the e2e
// suite). Each non-comment line is one command, run with bash from the
// repository root. Comment lines right after a command assert on it:
//
//	# exit N        the command's exit code (default 0)
//	# => TEXT       its combined output contains TEXT
package doctest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Command is one command of a runnable block with its expectations.
type Command struct {
	Line     int
	Script   string
	Exit     int
	Contains []string
}

// Block is a runnable shell block.
type Block struct {
	File     string
	Line     int
	Kind     string
	Commands []Command
}

// Parse returns the runnable blocks of kind ("test" or "e2e") in a Markdown file.
func Parse(file, kind string) ([]Block, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []Block
	var cur *Block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```sh "+kind):
			cur = &Block{File: file, Line: n, Kind: kind}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			if err := cur.add(n, trimmed); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
		}
	}
	return blocks, sc.Err()
}

func (b *Block) add(n int, line string) error {
	last := len(b.Commands) - 1
	switch {
	case line == "":
		return nil
	case strings.HasPrefix(line, "# exit "):
		if last < 0 {
			return fmt.Errorf("assertion before any command")
		}
		code, err := strconv.Atoi(strings.TrimPrefix(line, "# exit "))
		if err != nil {
			return err
		}
		b.Commands[last].Exit = code
	case strings.HasPrefix(line, "# => "):
		if last < 0 {
			return fmt.Errorf("assertion before any command")
		}
		b.Commands[last].Contains = append(b.Commands[last].Contains, strings.TrimPrefix(line, "# => "))
	case strings.HasPrefix(line, "#"):
	default:
		b.Commands = append(b.Commands, Command{Line: n, Script: line})
	}
	return nil
}

// Run runs every command of the block with bash in dir, with env added to
// the environment, and checks its expectations.
func Run(t *testing.T, b Block, dir string, env []string) {
	t.Helper()
	for _, c := range b.Commands {
		cmd := exec.Command("bash", "-o", "pipefail", "-c", c.Script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%s:%d: %s: %v", b.File, c.Line, c.Script, err)
		}
		if code != c.Exit {
			t.Errorf("%s:%d: %s\nexit %d, want %d; output:\n%s", b.File, c.Line, c.Script, code, c.Exit, out)
		}
		for _, want := range c.Contains {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s:%d: %s\noutput lacks %q; output:\n%s", b.File, c.Line, c.Script, want, out)
			}
		}
	}
}
