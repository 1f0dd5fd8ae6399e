//go:build !serveonly

package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/admitc/admitc/internal/verify"
)

// VerifyOptions are the options of `admitc verify`.
type VerifyOptions struct {
	Streams
	Output   string
	Paths    []string
	Strict   bool
	FileName string
	Selector string
	// CRDs is --crd (see policyFlags).
	CRDs []string
}

// NewVerifyCommand returns `admitc verify`.
func NewVerifyCommand(s Streams) *cobra.Command {
	o := &VerifyOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "verify [flags] PATH...",
		Short: "Run policy test files (gator suites, Kyverno tests) with admitc's engine",
		Long: `Finds test files under the paths, directories recursively, and runs them
with admitc's engine. A file found in a directory, and every file a test
names, must be a regular file (a FIFO is refused, exit 2).

Gator suites (kind Suite, apiVersion test.gatekeeper.sh/v1alpha1): each test's
ConstraintTemplate (its K8sNativeValidation CEL) and Constraint on each case's
object, every assertion judged as gator verify does: violations yes, no or a
count, optionally of the violations whose message matches a Go regexp. A
template with only Rego is reported unsupported; a template with Rego and
CEL is judged by its CEL, as Gatekeeper judges it with its CEL driver on
(the default), and a note on standard error says the Rego is not run.

Kyverno tests (kind Test, apiVersion cli.kyverno.io/v1alpha1, usually
.kyverno-test/kyverno-test.yaml): in a directory, as kyverno test, only the
files named --file-name are run (a test renamed to disable it is skipped,
with a note); a test file named as a path always runs. The test's policies
run on its resources, every expected result judged as kyverno test does:
one result per resource and rule (results under a Pod rule also cover its
autogen-NAME and autogen-cronjob-NAME rules), pass, fail, skip or error, a
resource the rule does not match passing as excluded, values files
(request.operation, namespace labels, subresources), userinfo files and
patchedResources. --test-case-selector runs only the results it selects,
as kyverno test's does.

Translated and run: validate.cel, pattern and anyPattern, deny and foreach
rules, JMESPath preconditions and context variables (the subset in
docs/kyverno-pattern-translation.md), mutate rules (patchStrategicMerge,
patchesJson6902, foreach), ValidatingPolicies and MutatingPolicies. A rule
admitc cannot run (a context entry loaded by an API call that the test's
values do not give, or from its clusterResources, from an image registry or
the global context, {{ }} variables in a pattern's keys, generate,
verifyImages, mutate targets, Kyverno's http and image data libraries) and a
test field it does not read are reported unsupported. ConfigMap context
entries and Kyverno's resource library read the test's cluster resources, as
kyverno test does.

Where kyverno test passes a result that is likely a mistake, admitc says so:
a result naming a rule its policy does not have (kyverno test: excluded,
pass) or a resource the test does not have (kyverno test ignores the name)
is a WARN row; a result nothing answers (the test has no resources, or the
expected patched resource is missing, where kyverno test prints no row) is a
NO-RESPONSE row. Both count in the summary and pass, as in kyverno test,
unless --strict is given: then they fail the run.

Exit codes: 0 every expected result passed, 1 any failed or is unsupported
(or, with --strict, is a warning or has no response), 2 unreadable or
malformed files, or a malformed --test-case-selector.`,
		Example: `  # Every suite of the Gatekeeper examples
  admitc verify examples/gatekeeper/

  # Every Kyverno test of the Kyverno examples
  admitc verify examples/kyverno/

  # One policy's results on one resource, failing on warnings too
  admitc verify --strict --test-case-selector policy=disallow-host-path,resource=bad-pod examples/kyverno/

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
			// Type-checking every suite's policies allocates far more
			// than it keeps: collecting half as often saves about a
			// quarter of the run (admitc verify
			// examples/kyverno-pattern/, 2 cores: 6.2 s instead of 8.0
			// s, peak RSS 460 MB instead of 350 MB).
			tuneGC(200)
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "output format: table, json, junit or markdown")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "fail the run on warnings (a result naming a rule or resource that does not exist) and on results without a response")
	cmd.Flags().StringVarP(&o.FileName, "file-name", "f", verify.DefaultTestFileName, "the name of the Kyverno test files run in a directory (as kyverno test --file-name)")
	cmd.Flags().StringSliceVar(&o.CRDs, "crd", nil, "CustomResourceDefinitions (apiextensions.k8s.io/v1) that make the kinds they define known to the Kyverno tests' policies: a file or directory of YAML or JSON; repeat or comma-separate. A rule on a CRD's kind then matches the CRD's group and is written against its schema, as compile --crd writes it; without it, such a rule matches its kind in any group, as before")
	cmd.Flags().StringVarP(&o.Selector, "test-case-selector", "t", "policy=*,rule=*,resource=*", "run only the Kyverno test results selected (as kyverno test): policy=GLOB,rule=GLOB,resource=GLOB, wildcards * and ?")
	return cmd
}

// Validate checks the flags.
func (o *VerifyOptions) Validate() error {
	switch o.Output {
	case "table", "json", "junit", "markdown":
	default:
		return usageError(fmt.Errorf("--output must be table, json, junit or markdown, got %q", o.Output))
	}
	if o.FileName == "" || strings.ContainsAny(o.FileName, `/\`) {
		return usageError(fmt.Errorf("--file-name must be a file name without a directory, got %q", o.FileName))
	}
	if _, err := verify.ParseSelector(o.Selector); err != nil {
		return usageError(err)
	}
	return nil
}

// Run runs the suites and writes the report; notes go to standard error.
func (o *VerifyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sel, err := verify.ParseSelector(o.Selector)
	if err != nil {
		return usageError(err)
	}
	crds, err := readCRDs(o.CRDs)
	if err != nil {
		return err
	}
	formats := []verify.Format{verify.Gator{}, verify.Kyverno{FileName: o.FileName, Selector: sel, CRDs: crds}}
	rep, err := verify.Run(ctx, o.Paths, verify.Options{Formats: formats, Strict: o.Strict})
	if err != nil {
		return usageError(err)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(o.Err, "note: %s\n", n)
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
