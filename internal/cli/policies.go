package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/examples"
	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// policyFlags are the flags every command that reads policies shares.
type policyFlags struct {
	Paths []string
	// Notes receives the compiler's notes on the policies (stderr), if set.
	Notes io.Writer
	// Required drops the built-in example set as the default: a command that
	// enforces policies (serve) must be told which.
	Required bool
	// Engine is the evaluation path (--engine).
	Engine string
	// KyvernoFilters is --kyverno-filters: "default", "none" or the path
	// of Kyverno's ConfigMap.
	KyvernoFilters string
	// Unfiltered leaves the flag out and Kyverno's filters off (compare
	// judges as kyverno apply does, with no installation's filters).
	Unfiltered bool
	// CRDs are the --crd files and directories.
	CRDs []string
}

// crdUsage is the help of --crd.
const crdUsage = `CustomResourceDefinitions (apiextensions.k8s.io/v1) that make the kinds they define known: a file or directory of YAML or JSON, multi-document, kubectl get crd -o yaml output included; repeat or comma-separate. A Kyverno rule on a CRD's kind then matches the CRD's group, served versions and plural, and is written against its schema; without it, an admission policy or webhook cannot name the kind's resources and the vap, map, webhook and static backends refuse it`

// kyvernoFiltersUsage is the help of --kyverno-filters.
const kyvernoFiltersUsage = `what a Kyverno installation keeps from its policies, applied to every Kyverno policy read: "default" (the v1.19 Helm chart's: namespaces kube-system, kube-public, kube-node-lease and kyverno; Events, Nodes, APIServices, TokenReviews, access reviews, Bindings, ReplicaSets, Kyverno's reports; requests by system:nodes), "none", or the file of your Kyverno's ConfigMap (kubectl get configmap kyverno -n kyverno -o yaml)`

// errPoliciesRequired is the usage error of serve without --policies.
var errPoliciesRequired = errors.New("admitc serve needs --policies: the policy files or directories to enforce, e.g. --policies /etc/admitc/policies/ " +
	"(the built-in example policies are for admitc test, compile and compare only)")

func (f *policyFlags) add(fs *pflag.FlagSet) {
	usage := "policy files or directories (JSON or YAML); repeat or comma-separate; default: the built-in example set"
	if f.Required {
		usage = "policy files or directories to enforce (JSON or YAML); repeat or comma-separate; required"
	}
	fs.StringSliceVarP(&f.Paths, "policies", "p", nil, usage)
	fs.StringVar(&f.Engine, "engine", string(runtime.FastPath), "how validating policies are evaluated: fast (compiled once, inputs and variables shared across policies) or reference (the API server's validator, policy by policy; slower, for cross-checking)")
	if !f.Unfiltered {
		fs.StringVar(&f.KyvernoFilters, "kyverno-filters", "default", kyvernoFiltersUsage)
	}
	fs.StringSliceVar(&f.CRDs, "crd", nil, crdUsage)
}

// crds reads the --crd files.
func (f *policyFlags) crds() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return readCRDs(f.CRDs)
}

// readCRDs reads the CRDs of --crd; a failure is a usage error.
func readCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	crds, err := compiler.ReadCRDs(paths)
	if err != nil {
		return nil, usageError(fmt.Errorf("--crd: %w", err))
	}
	return crds, nil
}

// filters are Kyverno's filters --kyverno-filters names (nil: none).
func (f *policyFlags) filters() (*kyverno.Filters, error) {
	return kyvernoFilters(f.KyvernoFilters, f.Unfiltered)
}

// kyvernoFilters reads --kyverno-filters: nil for "none" (or when off).
func kyvernoFilters(value string, off bool) (*kyverno.Filters, error) {
	switch {
	case off || value == "none":
		return nil, nil
	case value == "" || value == "default":
		return kyverno.DefaultFilters(), nil
	}
	data, err := inputfile.ReadFile(value)
	if err != nil {
		return nil, usageError(fmt.Errorf("--kyverno-filters: %w", err))
	}
	fl, err := kyverno.ReadFilters(value, data)
	if err != nil {
		return nil, usageError(fmt.Errorf("--kyverno-filters %w", err))
	}
	return fl, nil
}

// validate refuses a missing --policies when it is required.
func (f *policyFlags) validate() error {
	if f.Required && len(f.Paths) == 0 {
		return usageError(errPoliciesRequired)
	}
	return nil
}

// sources reads the policy files, or the built-in example set when none are
// given and none are required; a file of a directory that holds no policy
// (artifacthub-pkg.yml, a kustomization) is skipped with a notice on Notes
// (without Notes, as for serve, it is an error).
func (f *policyFlags) sources() ([]compiler.Source, error) {
	if f.Required && len(f.Paths) == 0 {
		return nil, errPoliciesRequired
	}
	if len(f.Paths) == 0 {
		data, err := fs.ReadFile(examples.FS, examples.DefaultPolicies)
		if err != nil {
			return nil, err
		}
		return []compiler.Source{{Name: "builtin:" + examples.DefaultPolicies, Data: data}}, nil
	}
	if f.Notes == nil {
		return compiler.ReadSources(f.Paths)
	}
	srcs, notices, err := compiler.ReadSourcesReport(f.Paths)
	for _, n := range notices {
		fmt.Fprintf(f.Notes, "notice: %s\n", n)
	}
	return srcs, err
}

// compile reads and compiles the policies; every failure is a usage error
// (exit 2) carrying all diagnostics.
func (f *policyFlags) compile(kubeVersion *version.Version) (*ir.PolicySet, error) {
	srcs, err := f.sources()
	if err != nil {
		return nil, usageError(err)
	}
	filters, err := f.filters()
	if err != nil {
		return nil, err
	}
	crds, err := f.crds()
	if err != nil {
		return nil, err
	}
	set, diags := compiler.Compile(srcs, compiler.Options{KubeVersion: kubeVersion, CRDs: crds})
	if len(diags) > 0 {
		return nil, usageError(fmt.Errorf("policies do not compile:\n%s", diags.Error()))
	}
	printNotes(f.Notes, set)
	if filters == nil {
		return set, nil
	}
	if set, err = filters.Apply(set); err != nil {
		return nil, usageError(fmt.Errorf("--kyverno-filters: %w", err))
	}
	return set, nil
}

// printNotes writes every note the compiler made on the policies, one line
// each: file:line:col: note: policy NAME: text.
func printNotes(w io.Writer, set *ir.PolicySet) {
	if w == nil {
		return
	}
	for _, p := range set.Policies {
		for _, n := range p.Notes {
			fmt.Fprintf(w, "%s:%d:%d: note: policy %q %s\n", p.Origin.File, p.Origin.Line, p.Origin.Column, p.Name, n)
		}
	}
}

// printSkipped writes what a compilation that kept going left out, one
// line each: file:line:col: skipped: KIND "NAME" rule "RULE": feature: why.
func printSkipped(w io.Writer, set *ir.PolicySet) {
	if w == nil {
		return
	}
	for _, s := range set.Skipped {
		what := fmt.Sprintf("%s %q", s.From.Kind, s.From.Name)
		if s.From.Namespace != "" {
			what = fmt.Sprintf("%s %q", s.From.Kind, s.From.Namespace+"/"+s.From.Name)
		}
		if s.From.Rule != "" {
			what += fmt.Sprintf(" rule %q", s.From.Rule)
		}
		fmt.Fprintf(w, "%s:%d:%d: skipped: %s: %s: %s\n", s.Origin.File, s.Origin.Line, s.Origin.Column, what, s.Feature, s.Reason)
	}
}

// engine compiles the policies into a runtime engine.
func (f *policyFlags) engine() (*runtime.Engine, error) {
	set, err := f.compile(nil)
	if err != nil {
		return nil, err
	}
	e, err := runtime.NewEngine(set, runtime.WithPath(runtime.Path(cmp.Or(f.Engine, string(runtime.FastPath)))))
	if err != nil {
		return nil, usageError(err)
	}
	return e, nil
}

// readParams reads parameter objects (ConfigMaps and the like) from files.
func readParams(paths []string) ([]*runtime.Manifest, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	ms, err := runtime.ReadManifests(paths)
	if err != nil {
		return nil, usageError(fmt.Errorf("read params: %w", err))
	}
	out := make([]*runtime.Manifest, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out, nil
}
