package migrate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/backends/kyverno"
	mapbackend "github.com/admitc/admitc/backends/map"
	"github.com/admitc/admitc/backends/vap"
	kyvernofrontend "github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/render"
	"github.com/admitc/admitc/ir"
)

// File is one output file, its path slash-separated and relative to the
// output directory.
type File struct {
	Path string
	Data []byte
}

// Result is everything one run writes: the files, in a fixed order, and
// the report.
type Result struct {
	Files  []File
	Report Report
}

// Native output files: the API server's own policies and bindings.
const (
	VAPFile = "vap.yaml"
	MAPFile = "map.yaml"
	// TestDir holds a migrated Kyverno test, as Kyverno's own layout does.
	TestDir = ".kyverno-test"
	// TestFile is the name of a migrated Kyverno test.
	TestFile = "kyverno-test.yaml"
)

// SuccessorFile is the file a successor kind is written to
// (validatingpolicy.yaml, namespacedvalidatingpolicy.yaml, mutatingpolicy.yaml).
func SuccessorFile(kind string) string { return strings.ToLower(kind) + ".yaml" }

// source is one input policy: its IR policies, what the importer skipped,
// and its translations.
type source struct {
	ref      ir.PolicyRef
	file     string
	policies []*ir.Policy
	// native are the policies as the API server must enforce them: with a
	// Kyverno installation's filters applied (nil: policies).
	enforced     map[string]*ir.Policy
	skipped      []ir.Skipped
	translations []kyverno.Translation
	report       *PolicyReport
}

// Options are what a run reads besides its paths.
type Options struct {
	// Filters are what the Kyverno installation being replaced keeps from
	// its policies; the admission policies written for the API server
	// leave out the same requests (the successors do not: Kyverno applies
	// its filters to them itself). Nil: none.
	Filters *kyvernofrontend.Filters
	// Namespaces scope every written policy to these namespaces (the
	// successors' matchConstraints, the admission policies' bindings).
	Namespaces []string
	// CRDs make the kinds they define resolvable (see
	// compiler.Options.CRDs): an admission policy is written for a rule
	// on a custom resource only when its CRD is given.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// Run migrates the policies in paths (files, or directories searched
// recursively, hidden directories left out). Every JSON and YAML file is
// reported (FileReport): one without a Kyverno or admission policy is
// skipped, one that cannot be read or does not compile (a kind admitc does
// not read, a CEL error) is refused with its reason and the rest is still
// migrated; a rule the importer or the successor format cannot take is
// reported as refused. Only a path that does not exist or holds no policy
// file at all is an error.
func Run(ctx context.Context, paths []string, opts Options) (*Result, error) {
	cands, files, err := policyFiles(paths)
	if err != nil {
		return nil, err
	}
	set, inputs, refused, err := compileFiles(cands, opts.CRDs)
	if err != nil {
		return nil, err
	}
	native, err := nativeSet(set, opts)
	if err != nil {
		return nil, err
	}
	if set, err = backends.ScopedToNamespaces(set, opts.Namespaces); err != nil {
		return nil, err
	}
	srcs, err := group(set, kyverno.Successors(set, SameAsReimport))
	if err != nil {
		return nil, err
	}
	for _, s := range srcs {
		s.enforced = native
	}
	res := &Result{Report: Report{Policies: []PolicyReport{}, Namespaces: opts.Namespaces}}
	if opts.Filters != nil {
		res.Report.Filters = &FiltersReport{Source: opts.Filters.Source, Filters: opts.Filters.Summary()}
	}
	for _, s := range srcs {
		fs, err := s.files()
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, fs...)
		res.Report.Policies = append(res.Report.Policies, *s.report)
	}
	tests, testReports, err := migrateTests(ctx, inputs, srcs)
	if err != nil {
		return nil, err
	}
	res.Files = append(res.Files, tests...)
	res.Report.Tests = testReports
	res.Report.Files = fileReports(files, inputs, refused, srcs)
	res.Report.count()
	return res, nil
}

// nativeSet is set as the API server must enforce it: with the filters
// applied, scoped to the namespaces; by policy name.
func nativeSet(set *ir.PolicySet, opts Options) (map[string]*ir.Policy, error) {
	out := set
	if opts.Filters != nil {
		var err error
		if out, err = opts.Filters.Apply(set); err != nil {
			return nil, err
		}
	}
	out, err := backends.ScopedToNamespaces(out, opts.Namespaces)
	if err != nil {
		return nil, err
	}
	byName := map[string]*ir.Policy{}
	for i := range out.Policies {
		byName[out.Policies[i].Name] = &out.Policies[i]
	}
	return byName, nil
}

// group gathers the set's policies, skipped rules and translations by
// input policy, in the order the policies were read.
func group(set *ir.PolicySet, ts []kyverno.Translation) ([]*source, error) {
	var order []*source
	byKey := map[string]*source{}
	get := func(ref ir.PolicyRef, file string) *source {
		key := ref.Kind + "|" + ref.Namespace + "|" + ref.Name
		s := byKey[key]
		if s == nil {
			s = &source{ref: ir.PolicyRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}, file: file}
			byKey[key] = s
			order = append(order, s)
		}
		return s
	}
	for i := range set.Policies {
		p := &set.Policies[i]
		s := get(refOf(p), p.Origin.File)
		s.policies = append(s.policies, p)
	}
	for _, sk := range set.Skipped {
		s := get(sk.From, sk.Origin.File)
		s.skipped = append(s.skipped, sk)
	}
	for _, t := range ts {
		s := get(t.From, "")
		s.translations = append(s.translations, t)
	}
	dirs := map[string]string{}
	for _, s := range order {
		s.report = s.buildReport()
		if other, ok := dirs[s.report.Dir]; ok {
			return nil, fmt.Errorf("%s and %s would both be written to %s/: rename one", other, describe(s.ref), s.report.Dir)
		}
		dirs[s.report.Dir] = describe(s.ref)
	}
	return order, nil
}

// refOf names the source of an IR policy: its Kyverno policy, or itself
// for an admission policy.
func refOf(p *ir.Policy) ir.PolicyRef {
	if p.From != nil {
		return *p.From
	}
	return ir.PolicyRef{Kind: "admission policy", Name: p.Name}
}

func describe(ref ir.PolicyRef) string {
	if ref.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	}
	return ref.Kind + " " + ref.Name
}

// dirName is the output directory of an input policy: its name,
// NAMESPACE.NAME for a namespaced one.
func dirName(ref ir.PolicyRef) string {
	if ref.Namespace != "" {
		return kyverno.ObjectName(ref.Namespace + "." + ref.Name)
	}
	return kyverno.ObjectName(ref.Name)
}

// files renders the successor files and the native files of one input:
// one file per kind, so each file holds the kind it is named after.
func (s *source) files() ([]File, error) {
	successors := map[string][]runtime.Object{}
	for _, t := range s.translations {
		for _, succ := range t.Successors {
			file := SuccessorFile(succ.Kind)
			successors[file] = append(successors[file], succ.Object)
		}
	}
	native, err := s.native()
	if err != nil {
		return nil, err
	}
	var out []File
	for _, objs := range []map[string][]runtime.Object{successors, native} {
		fs, err := s.render(objs)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// render writes each file's objects, files in name order, and lists the
// files in the report.
func (s *source) render(byFile map[string][]runtime.Object) ([]File, error) {
	names := make([]string, 0, len(byFile))
	for name := range byFile {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []File
	for _, name := range names {
		data, err := render.YAML(byFile[name])
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: s.report.Dir + "/" + name, Data: data})
		s.report.Files = append(s.report.Files, s.report.Dir+"/"+name)
	}
	return out, nil
}

// native renders the input's policies as ValidatingAdmissionPolicies (to
// vap.yaml) or MutatingAdmissionPolicies (to map.yaml) and their bindings,
// names made valid, and reports each under its rule.
func (s *source) native() (map[string][]runtime.Object, error) {
	out := map[string][]runtime.Object{}
	for _, p := range s.policies {
		if n, ok := s.enforced[p.Name]; ok {
			p = n
		}
		if why := backends.UnresolvedKindsReason(p); why != "" {
			s.report.NativeRefused = append(s.report.NativeRefused, NativeName(p.Name)+": "+why)
			continue
		}
		q, diags := backends.ForAPIServer(validNames(p), nil)
		if len(diags) > 0 {
			s.report.NativeRefused = append(s.report.NativeRefused, NativeName(p.Name)+": "+diags[0].Message)
			continue
		}
		file, objs := VAPFile, []runtime.Object{vap.Policy(q)}
		if q.Kind == ir.Mutating {
			file, objs = MAPFile, []runtime.Object{mapbackend.Policy(q)}
			for _, b := range mapbackend.Bindings(q, nil) {
				objs = append(objs, b)
			}
		} else {
			for _, b := range vap.Bindings(q, nil) {
				objs = append(objs, b)
			}
		}
		out[file] = append(out[file], objs...)
		s.report.admissionPolicy(p, file, q.Name)
	}
	return out, nil
}

// validNames is p with its name and its bindings' names made valid object
// names, when they are not (a rule name with spaces, say).
func validNames(p *ir.Policy) *ir.Policy {
	q := *p
	q.Name = NativeName(p.Name)
	q.Bindings = append([]ir.Binding(nil), p.Bindings...)
	for i := range q.Bindings {
		q.Bindings[i].Name = NativeName(q.Bindings[i].Name)
	}
	return &q
}

// NativeName is name when it is a valid admission policy name (a DNS-1123
// subdomain), else kyverno.ObjectName(name).
func NativeName(name string) string {
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	return kyverno.ObjectName(name)
}
