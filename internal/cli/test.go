//go:build !serveonly

package cli

import (
	"context"
	"encoding/json"
	"errors"
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
	Cluster     clusterFlags
	Namespace   string
	Params      []string
	Operation   string
	SubResource string
	Old         string
	Output      string
	Explain     bool
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
Built-in kinds are first defaulted as the API server defaults them (a Service
without a type is a ClusterIP Service); --no-defaults judges them as written.

--operation DELETE judges each manifest as the object being deleted, as the
API server sends a DELETE: the manifest is the request's oldObject, its object
is null, and the namespace is the manifest's (or --namespace). Policies that
match DELETE run (a ValidatingAdmissionPolicy, a Kyverno deny or foreach
rule); Kyverno's pattern and podSecurity rules never judge a DELETE.

Exit codes: 0 every object admitted, 1 any object denied, 2 unreadable input
or a policy that does not compile.`,
		Example: `  # The built-in example policies on the built-in example manifests
  admitc test examples/manifests/

  # Your policies, as a create in namespace shop, as JSON
  admitc test --policies policies.yaml --namespace shop -o json deploy/*.yaml

  # A policy with parameters (paramKind ConfigMap)
  admitc test -p examples/policies/params-policy.yaml --params examples/params/registries-k8s.json examples/manifests/good.json

  # Why was nothing denied? Each policy's part in each decision
  admitc test --explain -p policies.yaml deploy/

  # Would deleting this namespace be blocked?
  admitc test -p policies/ --operation DELETE namespace.yaml

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
	o.Cluster.add(f)
	f.StringVarP(&o.Namespace, "namespace", "n", "default", "namespace of the request, for objects that do not name one")
	f.StringSliceVar(&o.Params, "params", nil, "files holding parameter objects for policies with paramKind")
	f.StringVar(&o.Operation, "operation", "", "CREATE, UPDATE or DELETE (default CREATE, or UPDATE with --old); with DELETE each manifest is the object being deleted")
	f.StringVar(&o.SubResource, "subresource", "", "subresource of the request, e.g. ephemeralcontainers")
	f.StringVar(&o.Old, "old", "", "file holding the old object, for UPDATE")
	f.StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&o.Explain, "explain", false, "say, per object, what every policy did: not matched (and why), skipped by matchConditions, passed, violated, mutated")
	return cmd
}

// Validate checks the flags.
func (o *TestOptions) Validate() error {
	switch o.Output {
	case "text", "json":
	default:
		return usageError(fmt.Errorf("--output must be text or json, got %q", o.Output))
	}
	return o.validateOperation()
}

// validateOperation checks --operation against --old: UPDATE needs the old
// object, CREATE and DELETE take none (a DELETE's manifests are the
// objects being deleted).
func (o *TestOptions) validateOperation() error {
	switch op := ir.Operation(strings.ToUpper(o.Operation)); {
	case op != "" && op != ir.Create && op != ir.Update && op != ir.Delete:
		return usageError(fmt.Errorf("--operation must be CREATE, UPDATE or DELETE, got %q", o.Operation))
	case op == ir.Update && o.Old == "":
		return usageError(fmt.Errorf("--operation UPDATE needs --old: the object as stored before the update"))
	case op == ir.Create && o.Old != "":
		return usageError(fmt.Errorf("--old is for UPDATE; drop it or use --operation UPDATE"))
	case op == ir.Delete && o.Old != "":
		return usageError(fmt.Errorf("--old is for UPDATE; with --operation DELETE each manifest is the object being deleted (the API server's oldObject)"))
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
	if err := o.Cluster.complete(); err != nil {
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
		if o.old, err = o.Cluster.object("--old", ms[0].Object); err != nil {
			return err
		}
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
	// Notices are admitc's own remarks on the object, such as a kind no
	// loaded policy matches.
	Notices []string `json:"notices,omitempty"`
	// sameAs names the source of an earlier manifest with the same kind,
	// namespace and name, so text output can tell the two apart.
	sameAs string
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
	seen := map[string]string{}
	notice := func(n string) { fmt.Fprintf(o.Err, "notice: %s\n", n) }
	err := runtime.EachManifest(o.Manifests, notice, func(m runtime.Manifest) error {
		defaulted, err := o.Cluster.manifests([]runtime.Manifest{m})
		if err != nil {
			return err
		}
		m = defaulted[0]
		r, err := o.admit(ctx, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Source, err)
		}
		r.sameAs = sameName(seen, m)
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
		var ue *ExitError
		if errors.As(err, &ue) {
			return err
		}
		return usageError(err)
	}
	if sum.Objects == 0 {
		return usageError(fmt.Errorf("no Kubernetes objects in %s", strings.Join(o.Manifests, ", ")))
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
	if strings.EqualFold(o.Operation, string(ir.Delete)) {
		req = runtime.DeleteRequestFor(m.Object, o.Namespace)
	}
	req.SubResource = o.SubResource
	req.Params = o.params
	req.NamespaceLabels = o.Cluster.labelsOf(req.Namespace)
	req.Explain, req.Offline = o.Explain, o.Explain
	res, err := o.engine.Admit(ctx, req)
	if err != nil {
		return TestResult{}, err
	}
	r := TestResult{
		Source: m.Source, Kind: m.Object.GetKind(), Namespace: req.Namespace, Name: m.Object.GetName(),
		Allowed: res.Allowed(), Result: res, Warnings: res.Warnings(), AuditAnnotations: res.Annotations(),
	}
	if !o.engine.MatchesAnyResource(req) {
		r.Notices = append(r.Notices, fmt.Sprintf("no loaded policy matches %s (%s, resource %s): nothing judged it; check the kind's spelling and the policies' match.kinds",
			r.Kind, m.Object.GetAPIVersion(), req.Resource.Resource))
	}
	return r, nil
}

// sameName records m and returns the source of an earlier manifest with the
// same apiVersion, kind, namespace and name ("" for the first).
func sameName(seen map[string]string, m runtime.Manifest) string {
	key := m.Object.GetAPIVersion() + "/" + m.Object.GetKind() + "/" + m.Object.GetNamespace() + "/" + m.Object.GetName()
	if first, ok := seen[key]; ok {
		return first
	}
	seen[key] = m.Source
	return ""
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
	fmt.Fprintf(&b, "%s %s %s", verdict, r.Kind, objectRef(r.Namespace, r.Name))
	if r.sameAs != "" {
		fmt.Fprintf(&b, " (%s; same name as %s)", r.Source, r.sameAs)
	}
	b.WriteString("\n")
	for _, n := range r.Notices {
		fmt.Fprintf(&b, "  warning: %s\n", n)
	}
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
	for _, t := range r.Trace {
		fmt.Fprintf(&b, "  explain %s: %s", t.Policy, t.Outcome)
		if t.Detail != "" {
			fmt.Fprintf(&b, " (%s)", t.Detail)
		}
		b.WriteString("\n")
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
