package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

// What a directory is expected to do under the Kyverno CLI.
const (
	expectPass = "pass"
	// expectFail marks a fixture that plants wrong expectations on purpose.
	expectFail = "fail"
	// expectSkip marks a fixture the CLI cannot run offline.
	expectSkip = "skip"
)

// expectation is one line of the expectations file.
type expectation struct {
	Verdict, Reason string
}

type expectations map[string]expectation

// readExpectations reads "DIR fail|skip REASON" lines; '#' starts a comment.
// A directory not listed is expected to pass.
func readExpectations(file string) (expectations, error) {
	out := expectations{}
	if file == "" {
		return out, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || (fields[1] != expectFail && fields[1] != expectSkip) {
			return nil, fmt.Errorf("%s:%d: want DIR fail|skip REASON, got %q", file, n, line)
		}
		out[strings.TrimSuffix(fields[0], "/")] = expectation{Verdict: fields[1], Reason: strings.Join(fields[2:], " ")}
	}
	return out, sc.Err()
}

// allUsed fails on a listed directory that is not among dirs: a stale line
// would hide nothing, but it would mislead the reader.
func (e expectations) allUsed(dirs []string) error {
	seen := map[string]bool{}
	for _, d := range dirs {
		seen[d] = true
	}
	var stale []string
	for d := range e {
		if !seen[d] {
			stale = append(stale, d)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		return fmt.Errorf("the expectations file lists directories that are not fixtures: %s", strings.Join(stale, ", "))
	}
	return nil
}

func (e expectation) verdict() string {
	if e.Verdict == "" {
		return expectPass
	}
	return e.Verdict
}
