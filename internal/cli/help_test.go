package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

func TestEveryCommandHasASummaryAndAnExample(t *testing.T) {
	root := NewRootCommand(Streams{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		assert.NotEmpty(t, c.Short, "%s has no summary", c.CommandPath())
		assert.NotContains(t, strings.TrimSpace(c.Short), "\n", "%s: the summary must be one line", c.CommandPath())
		assert.NotEmpty(t, c.Example, "%s has no example", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	names := map[string]bool{}
	for _, c := range root.Commands() {
		names[c.Name()] = true
	}
	for _, want := range []string{"test", "cel", "compile", "vap", "webhook-config", "serve", "certs", "completion"} {
		assert.True(t, names[want], "missing command %s", want)
	}
}

func TestHelpAndCompletion(t *testing.T) {
	out, _, code := run(t, "test", "--help")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "Examples:\n  # The built-in example policies on the built-in example manifests\n  admitc test examples/manifests/")
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, _, code = run(t, "completion", shell)
		assert.Equal(t, ExitOK, code, shell)
		assert.Contains(t, out, "admitc", shell)
	}
	out, _, code = run(t, "__complete", "compile", "--backend", "")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "all\nvap\nmap\nwebhook\nkyverno\nkyverno-cel\ngatekeeper\nstatic\n:4\n", out)
	_, stderr, code := run(t, "no-such-command")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `unknown command "no-such-command" for "admitc"`)
	_, stderr, code = run(t, "test", "--no-such-flag", "x")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "unknown flag: --no-such-flag")
}
