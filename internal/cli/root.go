package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command, so CI can gate on them.
const (
	// ExitOK means success: every object admitted, outputs up to date.
	ExitOK = 0
	// ExitFailed means the check failed: an object was denied, engines
	// disagreed, or generated output differs from what is checked in.
	ExitFailed = 1
	// ExitUsage means bad input: unreadable files, a policy that does not
	// compile, a wrong flag.
	ExitUsage = 2
)

// ExitError carries an exit code; its message (if any) is printed to stderr.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks err as bad input (exit 2).
func usageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// failed is a silent exit 1: the command already printed why.
var failed = &ExitError{Code: ExitFailed}

// Streams are the command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// NewRootCommand returns the admitc command with every subcommand.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "admitc",
		Short: "Compile Kubernetes admission policies to every enforcement format, and test them offline",
		Long: `admitc compiles one policy file into ValidatingAdmissionPolicy,
MutatingAdmissionPolicy, Kyverno and webhook configurations, runs the same
policies as an HTTPS admission webhook, and tests manifests offline with
exactly the code the webhook runs.

Exit codes: 0 success, 1 a check failed (denied, disagreement, stale output),
2 bad input (unreadable file, policy that does not compile, wrong flag).`,
		Example: `  # Judge the built-in example manifests with the built-in example policies
  admitc test examples/manifests/

  # Compile the built-in example policies to every backend
  admitc compile`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	for _, c := range subcommands(s) {
		root.AddCommand(c)
	}
	addCompletionExamples(root)
	return root
}

// addCompletionExamples gives cobra's completion commands examples, like
// every other command.
func addCompletionExamples(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = "  # Load completion into the current bash session\n  source <(admitc completion bash)"
		for _, shell := range c.Commands() {
			shell.Example = fmt.Sprintf("  admitc completion %s > admitc-completion.%s", shell.Name(), shell.Name())
		}
	}
}

// extraCommands are added by optional builds (the Kyverno compare engine).
var extraCommands []func(Streams) *cobra.Command

func subcommands(s Streams) []*cobra.Command {
	cmds := append(toolCommands(s), NewServeCommand(s), NewCertsCommand(s), NewVersionCommand(s))
	for _, c := range extraCommands {
		cmds = append(cmds, c(s))
	}
	return cmds
}

// Execute runs the root command with args and returns the process exit code,
// printing any error to s.Err.
func Execute(s Streams, args []string) int {
	root := NewRootCommand(s)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintln(s.Err, "error: "+exit.Err.Error())
		}
		return exit.Code
	}
	// cobra's own errors (unknown command, missing args) are usage errors.
	fmt.Fprintln(s.Err, "error: "+err.Error())
	return ExitUsage
}
