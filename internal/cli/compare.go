//go:build !serveonly

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/compare"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/internal/upstream"
	"github.com/admitc/admitc/runtime"
)

// CompareOptions are the options of `admitc compare`.
type CompareOptions struct {
	Streams
	Policies  policyFlags
	Cluster   clusterFlags
	Namespace string
	Params    []string
	Output    string
	// Upstream, when set, is a file of hand-written VAP/MAP objects judged
	// instead of the generated ones.
	Upstream string
	// KyvernoPolicies, when set, is a file of hand-written ClusterPolicies
	// judged instead of the generated ones (kyverno builds only).
	KyvernoPolicies string
	// Kubeconfig adds a live API server as an engine.
	Kubeconfig string
	Manifests  []string
}

// extraEngines are added by optional builds (the Kyverno engine).
var extraEngines []func(o *CompareOptions, srcs []byte) (compare.Engine, func(), error)

// NewCompareCommand returns `admitc compare`.
func NewCompareCommand(s Streams) *cobra.Command {
	o := &CompareOptions{Streams: s, Policies: policyFlags{Unfiltered: true}}
	cmd := &cobra.Command{
		Use:   "compare [flags] MANIFEST...",
		Short: "Decide manifests with every engine and report each disagreement",
		Long: `Judges each manifest (as a CREATE in --namespace) with:
  admitc      admitc's runtime, the code admitc test and the webhook run;
  kubernetes  the API server's own validating and mutating admission policy
              plugins (k8s.io/apiserver), run in-process on admitc's generated
              ValidatingAdmissionPolicies, MutatingAdmissionPolicies and
              bindings, with the API server's defaults applied to them;
  kyverno     the Kyverno engine on admitc's generated ClusterPolicies, in
              builds made with -tags kyverno.
Built-in kinds are first defaulted as the API server defaults them, for every
engine (--no-defaults judges them as written); --namespace-labels gives the
namespaces' labels to the admitc and kubernetes engines.
It prints each engine's verdict (allowed, warned, denied), its first message
and whether it mutated the object, and every disagreement.

Exit codes: 0 every engine agrees, 1 any disagreement, 2 bad input.`,
		Example: `  admitc compare --namespace shop examples/manifests/

  # A comment for a pull request
  admitc compare --policies policies/ --namespace shop -o markdown deploy/

  # Is my hand-written VAP what admitc's policy means?
  admitc compare --policies policy.yaml --upstream-policies my-vap.yaml manifests/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Manifests = args
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	o.Policies.add(f)
	o.Cluster.add(f)
	f.StringVarP(&o.Namespace, "namespace", "n", "default", "namespace the manifests are created in")
	f.StringSliceVar(&o.Params, "params", nil, "files holding parameter objects for policies with paramKind")
	f.StringVarP(&o.Output, "output", "o", "table", "output format: table, json or markdown")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "also ask this API server (dry-run creates, after applying the generated VAP/MAP, deleted afterwards; use a test cluster)")
	f.StringVar(&o.Upstream, "upstream-policies", "", "judge these ValidatingAdmissionPolicy/MutatingAdmissionPolicy objects in the kubernetes column instead of the generated ones")
	if len(extraEngines) > 0 {
		f.StringVar(&o.KyvernoPolicies, "kyverno-policies", "", "judge these Kyverno ClusterPolicies in the kyverno column instead of the generated ones")
	}
	return cmd
}

// Run decides and reports.
func (o *CompareOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Output != "table" && o.Output != "json" && o.Output != "markdown" {
		return usageError(fmt.Errorf("--output must be table, json or markdown, got %q", o.Output))
	}
	if err := o.Cluster.complete(); err != nil {
		return err
	}
	manifests, err := runtime.ReadManifests(o.Manifests)
	if err != nil {
		return usageError(err)
	}
	if manifests, err = o.Cluster.manifests(manifests); err != nil {
		return err
	}
	stream, err := o.upstreamStream()
	if err != nil {
		return err
	}
	engines, stop, err := o.engines(stream)
	if err != nil {
		return err
	}
	defer stop()
	if o.Kubeconfig != "" {
		live, err := o.live(ctx, engines[0], stream, manifests)
		if err != nil {
			return err
		}
		defer live.Close()
		engines = append(engines, live)
	}
	rows, err := compare.Run(ctx, engines, manifests, o.Namespace)
	if err != nil {
		return usageError(err)
	}
	switch o.Output {
	case "json":
		err = compare.WriteJSON(o.Out, rows)
	case "markdown":
		err = compare.WriteMarkdown(o.Out, rows)
	default:
		err = compare.WriteTable(o.Out, rows)
	}
	if err != nil {
		return err
	}
	if !compare.AllAgree(rows) {
		return failed
	}
	return nil
}

// engines builds the offline engines; stream is the VAP/MAP YAML the
// kubernetes column judges.
func (o *CompareOptions) engines(stream []byte) ([]compare.Engine, func(), error) {
	o.Policies.Notes = o.Err
	engine, err := o.Policies.engine()
	if err != nil {
		return nil, nil, err
	}
	ps, err := readParams(o.Params)
	if err != nil {
		return nil, nil, err
	}
	var params []*unstructured.Unstructured
	for _, p := range ps {
		params = append(params, p.Object)
	}
	objs, err := upstream.Parse("policies", stream)
	if err != nil {
		return nil, nil, usageError(err)
	}
	objs.Params = params
	objs.Namespaces = o.Cluster.namespaces(o.Namespace)
	up, err := upstream.New(objs)
	if err != nil {
		return nil, nil, err
	}
	engines := []compare.Engine{compare.Admitc{Engine: engine, Params: params, NamespaceLabels: o.Cluster.labels}, compare.Upstream{Engine: up}}
	stops := []func(){up.Close}
	for _, extra := range extraEngines {
		e, stop, err := extra(o, stream)
		if err != nil {
			return nil, nil, err
		}
		if e == nil {
			continue // the engine cannot judge these policies and said so
		}
		engines = append(engines, e)
		stops = append(stops, stop)
	}
	return engines, func() {
		for _, s := range stops {
			s()
		}
	}, nil
}

// upstreamStream is the VAP/MAP YAML the kubernetes column judges.
func (o *CompareOptions) upstreamStream() ([]byte, error) {
	if o.Upstream != "" {
		data, err := os.ReadFile(o.Upstream)
		if err != nil {
			return nil, usageError(fmt.Errorf("read --upstream-policies: %w", err))
		}
		return data, nil
	}
	srcs, err := o.Policies.sources()
	if err != nil {
		return nil, usageError(err)
	}
	crds, err := o.Policies.crds()
	if err != nil {
		return nil, err
	}
	res, diags, err := generate.Run(generate.Request{Sources: srcs, Backends: []string{"vap", "map"},
		Options: backends.Options{Namespaces: []string{o.Namespace}}, CRDs: crds})
	if err != nil {
		return nil, usageError(err)
	}
	if len(diags) > 0 {
		return nil, usageError(fmt.Errorf("cannot compile:\n%s", diags.Error()))
	}
	var parts [][]byte
	for _, f := range res.Files {
		if len(f.Data) > 0 {
			parts = append(parts, f.Data)
		}
	}
	return bytes.Join(parts, []byte("---\n")), nil
}

// live applies the generated policies to the API server of --kubeconfig and
// waits until it judges the first manifest as admitc does, verdict and
// mutation (policies take effect one by one after a short delay), for at
// most 15 s.
func (o *CompareOptions) live(ctx context.Context, ref compare.Engine, stream []byte, manifests []runtime.Manifest) (*compare.Live, error) {
	ms, err := runtime.DecodeManifests("policies", stream)
	if err != nil {
		return nil, usageError(err)
	}
	var objs []*unstructured.Unstructured
	for _, m := range ms {
		objs = append(objs, m.Object)
	}
	live, err := compare.NewLive(o.Kubeconfig, objs)
	if err != nil {
		return nil, usageError(err)
	}
	if len(manifests) > 0 {
		want, err := ref.Admit(ctx, manifests[0].Object.DeepCopy(), o.Namespace)
		if err != nil {
			live.Close()
			return nil, err
		}
		live.Settle(ctx, manifests[0].Object, o.Namespace, func(r compare.Result) bool { return compare.Agree(want, r) }, 15*time.Second)
	}
	return live, nil
}
