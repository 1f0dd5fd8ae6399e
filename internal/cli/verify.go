//go:build !serveonly

package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/admitc/admitc/internal/verify"
)

// VerifyOptions are the options of `admitc verify`.
type VerifyOptions struct {
	Streams
	Output string
	Paths  []string
}

// NewVerifyCommand returns `admitc verify`.
func NewVerifyCommand(s Streams) *cobra.Command {
	o := &VerifyOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "verify [flags] PATH...",
		Short: "Run policy test files (gator suites, Kyverno tests) with admitc's engine",
		Long: `Finds test files under the paths, directories recursively, and runs them
with admitc's engine.

Gator suites (kind Suite, apiVersion test.gatekeeper.sh/v1alpha1): each test's
ConstraintTemplate (its K8sNativeValidation CEL) and Constraint on each case's
object, every assertion judged as gator verify does: violations yes, no or a
count, optionally of the violations whose message matches a Go regexp. A
template with only Rego is reported unsupported.

Kyverno tests (kind Test, apiVersion cli.kyverno.io/v1alpha1, usually
.kyverno-test/kyverno-test.yaml): the test's policies on its resources, every
expected result judged as kyverno test does: one result per resource and rule
(results under a Pod rule also cover its autogen-NAME and
autogen-cronjob-NAME rules), pass, fail, skip or error, a resource the rule
does not match passing as excluded, values files (request.operation,
namespace labels, subresources), userinfo files and patchedResources. A rule
admitc cannot run (an API call in its context, a pattern rule, a Kyverno-only
CEL library) and a test field it does not read are reported unsupported.

Exit codes: 0 every expected result passed, 1 any failed or is unsupported,
2 unreadable or malformed files.`,
		Example: `  # Every suite of the Gatekeeper examples
  admitc verify examples/gatekeeper/

  # Every Kyverno test of the Kyverno examples
  admitc verify examples/kyverno/

  # One suite, as JUnit XML for CI
  admitc verify -o junit examples/gatekeeper/allowed-repos/suite.yaml > verify.xml

  # A pull-request comment
  admitc verify -o markdown policies/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, json, junit or markdown")
	return cmd
}

// Validate checks the flags.
func (o *VerifyOptions) Validate() error {
	switch o.Output {
	case "table", "json", "junit", "markdown":
		return nil
	}
	return usageError(fmt.Errorf("--output must be table, json, junit or markdown, got %q", o.Output))
}

// Run runs the suites and writes the report.
func (o *VerifyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rep, err := verify.Run(ctx, o.Paths, verify.Formats)
	if err != nil {
		return usageError(err)
	}
	write := map[string]func(*verify.Report) error{
		"table":    func(r *verify.Report) error { return r.WriteTable(o.Out) },
		"json":     func(r *verify.Report) error { return r.WriteJSON(o.Out) },
		"junit":    func(r *verify.Report) error { return r.WriteJUnit(o.Out) },
		"markdown": func(r *verify.Report) error { return r.WriteMarkdown(o.Out) },
	}[o.Output]
	if err := write(rep); err != nil {
		return err
	}
	switch {
	case rep.Summary.Errors > 0:
		return &ExitError{Code: ExitUsage}
	case !rep.Passed():
		return failed
	}
	return nil
}
