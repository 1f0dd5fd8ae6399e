package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// Source is one policy file: its name (used in diagnostics) and its bytes.
type Source struct {
	Name string
	Data []byte
}

// Options tune compilation.
type Options struct {
	// KubeVersion is the oldest API server the output must run on; CEL is
	// type-checked against the libraries that version offers. Nil means the
	// runtime's own version.
	KubeVersion *version.Version
	// KeepGoing leaves out the policies and rules that need what admitc
	// cannot evaluate (a Kyverno rule with an API call, say) and lists them
	// in the set's Skipped, instead of reporting them as errors.
	KeepGoing bool
	// Budget bounds what compiling each file may cost; its zero value is
	// the defaults.
	Budget Budget
	// CRDs make the kinds they define resolvable, as the built-in kinds
	// are: a Kyverno kinds entry names the CRD's resources, and a rule
	// on it is written against the CRD's schema (see ReadCRDs).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// ContextValues give a Kyverno rule's apiCall context entries the
	// values a Kyverno test's values file gives them: kyverno test makes
	// no API calls offline and reads such an entry from its values only,
	// and so does admitc verify (see kyverno.ContextValues). Nil: every
	// apiCall entry is refused.
	ContextValues kyverno.ContextValues
	// KyvernoRoles are the requesting user's roles and cluster roles,
	// which Kyverno resolves from RBAC at admission and kyverno test takes
	// from a test's userinfo file: a Kyverno rule's roles and clusterRoles
	// filters are decided for them (admitc verify sets them). Nil: such a
	// rule is refused.
	KyvernoRoles *kyverno.UserRoles
}

// ForgetCaches drops what compiling kept for the next compile: the
// programs of the type checks, the built-in kinds' schemas and Kyverno's
// CRD schemas (together tens of MB for a large policy set). A process that
// compiled its policies and compiles no more until a reload (audit, serve)
// calls it so its memory holds only what judging needs; a later Compile
// builds them again.
func ForgetCaches() {
	celenv.ForgetPrograms()
	kubeschema.Forget()
	kyverno.ForgetCRDSchemas()
}

// Compile parses, lowers and type-checks the given policy files into one
// policy set. Policy names must be unique across all files. On any error it
// returns all diagnostics it found and a nil set.
//
// It works in three passes: every file is read and lowered in order; every
// policy's CEL is type-checked (and a cel policy's workload policies are
// generated and checked) on all cores, the bulk of the work; then the
// results are taken in file order, exactly as a single pass would.
func Compile(sources []Source, opts Options) (*ir.PolicySet, Diagnostics) {
	set := &ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{}}
	var diags Diagnostics
	names := map[string]ir.Origin{}
	var bindings []foreignBinding
	var brokenTemplateKinds []string
	files := make([]*fileWork, len(sources))
	var jobs []*checkJob
	kinds, err := kubeschema.NewResolver(opts.CRDs...)
	if err != nil {
		return nil, Diagnostics{{Message: err.Error()}}
	}
	for i, src := range sources {
		files[i] = readFile(src, opts, kinds)
		jobs = append(jobs, files[i].jobs()...)
	}
	runChecks(jobs)
	for _, fw := range files {
		r := fw.r
		if fw.refused {
			diags = append(diags, r.diags...)
			continue
		}
		for _, d := range fw.decls {
			set.Policies = append(set.Policies, r.compilePolicy(d, names)...)
		}
		for _, f := range fw.foreign {
			set.Policies = append(set.Policies, r.compileForeign(f, names)...)
			set.Skipped = append(set.Skipped, f.skipped...)
			if f.binding != nil {
				bindings = append(bindings, foreignBinding{binding: f.binding, policyName: f.policyName, kind: f.kind, constraint: f.constraint})
			}
		}
		diags = append(diags, r.diags...)
		brokenTemplateKinds = append(brokenTemplateKinds, r.brokenTemplateKinds...)
	}
	diags = append(diags, attachBindings(set, bindings, brokenTemplateKinds)...)
	if !opts.KeepGoing {
		diags = append(diags, skippedDiagnostics(set.Skipped)...)
		set.Skipped = nil
	}
	if len(diags) > 0 {
		diags.Sort()
		return nil, diags
	}
	return set, nil
}

// parse reads every document of a file: admitc's own policy files become
// declarations, other formats go to their frontends.
func (r *reader) parse(data []byte) ([]*policyDecl, []foreignDoc) {
	docs := r.documents(data)
	if len(docs) == 0 && len(r.diags) == 0 {
		r.errorf(ir.Origin{File: r.file, Line: 1, Column: 1}, `empty policy file: expected an object with a "policies" list`)
	}
	var decls []*policyDecl
	var foreign []foreignDoc
	for _, n := range docs {
		if isForeign(n) {
			if f, ok := r.readForeign(n); ok {
				foreign = append(foreign, f)
			}
			continue
		}
		decls = append(decls, r.readFile(field{node: n, origin: ir.Origin{File: r.file, Line: n.Line, Column: n.Column}})...)
	}
	return decls, foreign
}

// compilePolicy takes one lowered policy's results: its name, its CEL's
// errors and, for a cel policy, the workload policies generated from it
// (see autogenCEL), with their names and errors.
func (r *reader) compilePolicy(d *declWork, names map[string]ir.Origin) []ir.Policy {
	before := len(r.diags)
	r.claimName(d.decl.policy.Name, d.decl.obj.fields["name"].origin, "", names)
	// Each policy's CEL is checked unless the policy itself has errors, so
	// one run reports every broken expression in the file.
	if d.check == nil || len(r.diags) != before {
		return []ir.Policy{d.decl.policy}
	}
	r.takeCheck(d.check)
	if d.decl.policy.Type != TypeCEL || len(r.diags) != before {
		return []ir.Policy{d.decl.policy}
	}
	out := d.check.generated
	for i := range out {
		if i > 0 {
			r.claimName(out[i].Name, d.decl.policy.Origin, d.decl.policy.Name, names)
			r.takeGenerated(d.check.generatedChecks[i])
		}
	}
	return out
}

// claimName records a policy name, reporting one already used. from names
// the policy a generated name was made from.
func (r *reader) claimName(name string, o ir.Origin, from string, names map[string]ir.Origin) {
	if name == "" {
		return
	}
	if first, dup := names[name]; dup {
		what := fmt.Sprintf("policy name %q", name)
		if from != "" {
			what = fmt.Sprintf("policy name %q (generated for the workloads of %q)", name, from)
		}
		r.errorf(o, "%s is already used at %s; names must be unique across all policy files", what, fmtOrigin(first))
		return
	}
	names[name] = o
}

// takeGenerated reports the errors of a policy admitc rewrote at the policy,
// with the rewritten CEL.
func (r *reader) takeGenerated(c *checkJob) {
	if c.err != nil {
		r.errorf(c.policy.Origin, "%v", c.err)
		return
	}
	for _, e := range c.errs {
		r.errorf(c.policy.Origin, "%s: the CEL rewritten for its workloads does not compile: %s (rewritten CEL: %s)", c.policy.Name, e.Message, e.Expression)
	}
}

// takeCheck maps each type-checking error back to its place in the file.
func (r *reader) takeCheck(c *checkJob) {
	if c.err != nil {
		r.errorf(c.policy.Origin, "%v", c.err)
		return
	}
	for _, e := range c.errs {
		r.diags = append(r.diags, r.celDiagnostic(c.policy, e))
	}
}

func (r *reader) celDiagnostic(p *ir.Policy, e celenv.ExprError) Diagnostic {
	f, fromFile := r.exprNodes[e.Origin.Path]
	if !fromFile || !expressionsFromFile(p.Type) {
		// A built-in type's generated CEL failed: a bug in admitc or a library
		// the target version lacks. Point at the policy and show the CEL.
		return Diagnostic{Origin: p.Origin, Message: fmt.Sprintf("%s cannot be compiled for this Kubernetes version: %s (generated CEL: %s)", p.Type, e.Message, e.Expression)}
	}
	o := e.Origin
	n := f.node
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && e.Line > 0:
		// A block's content starts on the line after its indicator; its
		// indentation is the first content line's, and CEL counts columns
		// from there (a continuation line's extra spaces are CEL's).
		o.Line = n.Line + e.Line
		if n.Line < len(r.lines) {
			first := r.lines[n.Line]
			o.Column = len(first) - len(strings.TrimLeft(first, " ")) + e.Column
		}
	case e.Line == 1:
		o.Line, o.Column = n.Line, n.Column+e.Column-1
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			o.Column++
		}
	}
	d := Diagnostic{Origin: o, Message: e.Message}
	if o.Line-1 < len(r.lines) && o.Line > 0 {
		d.SourceLine = r.lines[o.Line-1]
	}
	return d
}

// ReadSources reads policy files and directories (their *.json, *.yaml and
// *.yml files, sorted by name, not recursive).
func ReadSources(paths []string) ([]Source, error) {
	return readSources(paths, nil)
}

// ReadSourcesReport is ReadSources that also skips, inside directories,
// files that hold no policy (see NotAPolicyFile), returning a notice for
// each: an Artifact Hub artifacthub-pkg.yml beside a policy, a
// kustomization, a test file. A file named explicitly is never skipped,
// and a directory left with no file is an error.
func ReadSourcesReport(paths []string) ([]Source, []string, error) {
	var notices []string
	srcs, err := readSources(paths, func(n string) { notices = append(notices, n) })
	return srcs, notices, err
}

// readSources reads paths; with notice set, a file of a directory that is
// not a policy file is skipped and named to notice.
func readSources(paths []string, notice func(string)) ([]Source, error) {
	var out []Source
	for _, p := range paths {
		files, inDir, err := expand(p)
		if err != nil {
			return nil, err
		}
		var kept []Source
		for _, f := range files {
			data, err := readBounded(f)
			if err != nil {
				return nil, err
			}
			if why := NotAPolicyFile(data); inDir && notice != nil && why != "" {
				notice(fmt.Sprintf("skipped %s: %s", f, why))
				continue
			}
			kept = append(kept, Source{Name: f, Data: data})
		}
		if inDir && len(kept) == 0 {
			return nil, errors.New("policy directory " + p + " holds no policy file")
		}
		out = append(out, kept...)
	}
	return out, nil
}

// notPolicyGroups are the API groups of files that sit beside policies but
// are not policies: kustomize's, Kyverno's test files and gator's suites.
var notPolicyGroups = map[string]string{
	"kustomize.config.k8s.io": "a kustomize file",
	"cli.kyverno.io":          "a Kyverno test file",
	"test.gatekeeper.sh":      "a gator suite",
}

// NotAPolicyFile says why data holds no policy, or "" when it may: every
// document of it either has no kind and no policies list (admitc's own
// format has one), as an Artifact Hub package, Helm values or a Chart.yaml
// have, or is of a group that is not policies (notPolicyGroups). A file
// that is not valid YAML or JSON may be a policy: the compiler reports it.
func NotAPolicyFile(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	why := ""
	for {
		var head struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Policies   any    `yaml:"policies"`
		}
		err := dec.Decode(&head)
		if errors.Is(err, io.EOF) {
			return why
		}
		if err != nil {
			return ""
		}
		group, _, _ := strings.Cut(head.APIVersion, "/")
		switch {
		case head.Kind == "" && head.Policies == nil:
			why = "not a policy file (no kind and no policies list: an Artifact Hub package, Helm values or chart file)"
		case notPolicyGroups[group] != "":
			why = "not a policy file (" + notPolicyGroups[group] + ", " + head.APIVersion + " " + head.Kind + ")"
		default:
			return ""
		}
	}
}

// readBounded reads a policy file of at most MaxPolicyFileBytes.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPolicyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read policy file %s: %w", name, err)
	}
	if len(data) > MaxPolicyFileBytes {
		return nil, fmt.Errorf("policy file %s is larger than %d MiB: split it into several files", name, MaxPolicyFileBytes>>20)
	}
	return data, nil
}

// IsPolicyFile reports whether ReadSources reads a directory entry named
// name as a policy file: JSON or YAML, by extension.
func IsPolicyFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

// expand lists the files of path p; inDir is true when p is a directory.
func expand(p string) ([]string, bool, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, false, fmt.Errorf("read policy file: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, false, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, true, fmt.Errorf("read policy directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !IsPolicyFile(e.Name()) || e.IsDir() {
			continue
		}
		name := filepath.Join(p, e.Name())
		if err := inputfile.CheckEntry(name, e); err != nil {
			return nil, true, fmt.Errorf("read policy directory: %w", err)
		}
		files = append(files, name)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, true, errors.New("policy directory " + p + " holds no .json, .yaml or .yml files")
	}
	return files, true, nil
}
