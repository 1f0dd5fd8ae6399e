package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// TestOptions are the options of `admitc test`.
type TestOptions struct {
	Streams
	Policies    policyFlags
	Namespace   string
	Params      []string
	Operation   string
	SubResource string
	Old         string
	Output      string
	Manifests   []string

	engine *runtime.Engine
	params []*unstructured.Unstructured
	old    *unstructured.Unstructured
}

// NewTestCommand returns `admitc test`.
func NewTestCommand(s Streams) *cobra.Command {
	o := &TestOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "test [flags] MANIFEST...",
		Short: "Admit manifests offline with exactly the code the webhook runs",
		Long: `Runs every manifest through admitc's admission chain, as the API server
would: mutations first (reported as JSON Patch operations), then validation of
the mutated object. Manifests are JSON or YAML files or directories;
multi-document YAML and kind: List are expanded.

Exit codes: 0 every object admitted, 1 any object denied, 2 unreadable input
or a policy that does not compile.`,
		Example: `  # The built-in example policies on the built-in example manifests
  admitc test examples/manifests/

  # Your policies, as a create in namespace shop, as JSON
  admitc test --policies policies.yaml --namespace shop -o json deploy/*.yaml

  # A policy with parameters (paramKind ConfigMap)
  admitc test -p examples/policies/params-policy.yaml --params examples/params/registries-k8s.json examples/manifests/good.json

  # kubectl debug: an UPDATE of pods/ephemeralcontainers
  admitc test --operation UPDATE --subresource ephemeralcontainers --old examples/manifests/good.json examples/more/debug-sysadmin.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Manifests = args
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	o.Policies.add(f)
	f.StringVarP(&o.Namespace, "namespace", "n", "default", "namespace of the request, for objects that do not name one")
	f.StringSliceVar(&o.Params, "params", nil, "files holding parameter objects for policies with paramKind")
	f.StringVar(&o.Operation, "operation", "", "CREATE or UPDATE (default CREATE, or UPDATE with --old)")
	f.StringVar(&o.SubResource, "subresource", "", "subresource of the request, e.g. ephemeralcontainers")
	f.StringVar(&o.Old, "old", "", "file holding the old object, for UPDATE")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	return cmd
}

// Validate checks the flags.
func (o *TestOptions) Validate() error {
	switch o.Output {
	case "text", "json":
	default:
		return usageError(fmt.Errorf("--output must be text or json, got %q", o.Output))
	}
	switch strings.ToUpper(o.Operation) {
	case "", string(ir.Create), string(ir.Update):
	default:
		return usageError(fmt.Errorf("--operation must be CREATE or UPDATE, got %q", o.Operation))
	}
	if strings.EqualFold(o.Operation, "UPDATE") && o.Old == "" {
		return usageError(fmt.Errorf("--operation UPDATE needs --old: the object as stored before the update"))
	}
	if o.Old != "" && strings.EqualFold(o.Operation, "CREATE") {
		return usageError(fmt.Errorf("--old is for UPDATE; drop it or use --operation UPDATE"))
	}
	return nil
}

// Complete compiles the policies and reads parameter and old objects.
func (o *TestOptions) Complete() error {
	var err error
	o.Policies.Notes = o.Err
	if o.engine, err = o.Policies.engine(); err != nil {
		return err
	}
	ps, err := readParams(o.Params)
	if err != nil {
		return err
	}
	for _, p := range ps {
		o.params = append(o.params, p.Object)
	}
	if o.Old != "" {
		ms, err := runtime.ReadManifests([]string{o.Old})
		if err != nil {
			return usageError(fmt.Errorf("read --old: %w", err))
		}
		if len(ms) != 1 {
			return usageError(fmt.Errorf("--old must hold exactly one object, found %d", len(ms)))
		}
		o.old = ms[0].Object
	}
	return nil
}

// TestResult is the outcome for one manifest.
type TestResult struct {
	Source    string `json:"source"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Allowed   bool   `json:"allowed"`
	*runtime.Result
	Warnings         []string          `json:"warnings,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
}

// Run judges every manifest and prints the results. Text output is written
// object by object as each is judged; JSON output is one document, written
// at the end.
func (o *TestOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var results []TestResult
	var sum testSummary
	var writeErr error
	err := runtime.EachManifest(o.Manifests, func(m runtime.Manifest) error {
		r, err := o.admit(ctx, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Source, err)
		}
		sum.add(r)
		if o.Output == "json" {
			results = append(results, r)
			return nil
		}
		writeErr = writeTestResultText(o.Out, r)
		return writeErr
	})
	if writeErr != nil {
		return writeErr
	}
	if err != nil {
		return usageError(err)
	}
	if o.Output == "json" {
		err = writeTestJSON(o.Out, results)
	} else {
		err = writeTestSummaryText(o.Out, sum)
	}
	if err != nil {
		return err
	}
	if sum.Denied > 0 {
		return failed
	}
	return nil
}

func (o *TestOptions) admit(ctx context.Context, m runtime.Manifest) (TestResult, error) {
	if ns := m.Object.GetNamespace(); ns != "" && o.Namespace != "default" && ns != o.Namespace {
		return TestResult{}, fmt.Errorf("the namespace of the object (%s) does not match --namespace %s", ns, o.Namespace)
	}
	req := runtime.RequestFor(m.Object, o.old, o.Namespace)
	req.SubResource = o.SubResource
	req.Params = o.params
	res, err := o.engine.Admit(ctx, req)
	if err != nil {
		return TestResult{}, err
	}
	return TestResult{
		Source: m.Source, Kind: m.Object.GetKind(), Namespace: req.Namespace, Name: m.Object.GetName(),
		Allowed: res.Allowed(), Result: res, Warnings: res.Warnings(), AuditAnnotations: res.Annotations(),
	}, nil
}

func writeTestJSON(w io.Writer, results []TestResult) error {
	summary := summarise(results)
	out := struct {
		Results []TestResult `json:"results"`
		Summary testSummary  `json:"summary"`
	}{results, summary}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

type testSummary struct {
	Objects      int `json:"objects"`
	Allowed      int `json:"allowed"`
	Denied       int `json:"denied"`
	WithWarnings int `json:"withWarnings"`
}

func summarise(results []TestResult) testSummary {
	var s testSummary
	for _, r := range results {
		s.add(r)
	}
	return s
}

func (s *testSummary) add(r TestResult) {
	s.Objects++
	if r.Allowed {
		s.Allowed++
	} else {
		s.Denied++
	}
	if len(r.Warnings) > 0 {
		s.WithWarnings++
	}
}

// writeTestResultText prints one object's verdict, patches, violations and
// audit annotations.
func writeTestResultText(w io.Writer, r TestResult) error {
	var b strings.Builder
	verdict := "ALLOWED"
	if !r.Allowed {
		verdict = "DENIED"
	}
	fmt.Fprintf(&b, "%s %s %s\n", verdict, r.Kind, objectRef(r.Namespace, r.Name))
	for _, p := range r.Patches {
		for _, op := range p.Ops {
			fmt.Fprintf(&b, "  patch %s %s%s (%s)\n", op.Op, op.Path, patchValue(op), p.Policy)
		}
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  %s %s\n", actionLabel(v.Actions), v.Labelled())
	}
	for _, k := range sortedAnnotationKeys(r.Result.AuditAnnotations) {
		fmt.Fprintf(&b, "  audit-annotation %s=%s\n", k, r.Result.AuditAnnotations[k])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTestSummaryText(w io.Writer, s testSummary) error {
	_, err := fmt.Fprintf(w, "%d object(s): %d allowed, %d denied, %d with warnings\n", s.Objects, s.Allowed, s.Denied, s.WithWarnings)
	return err
}

func objectRef(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func patchValue(op runtime.PatchOp) string {
	if op.Op == "remove" {
		return ""
	}
	b, err := json.Marshal(op.Value)
	if err != nil {
		return " <unprintable>"
	}
	return " " + string(b)
}

func actionLabel(actions []ir.Action) string {
	parts := make([]string, len(actions))
	for i, a := range actions {
		parts[i] = strings.ToLower(string(a))
	}
	return strings.Join(parts, "+")
}
