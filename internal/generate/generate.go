// Package generate is admitc's compile pipeline: policy files → IR →
// every selected backend → one rendered file per backend. `admitc compile`,
// its shortcuts and the golden tests all run this one function, so what the
// golden files show is byte for byte what users get.
package generate

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/backends/gatekeeper"
	"github.com/admitc/admitc/backends/kyverno"
	mapbackend "github.com/admitc/admitc/backends/map"
	"github.com/admitc/admitc/backends/static"
	"github.com/admitc/admitc/backends/vap"
	"github.com/admitc/admitc/backends/webhook"
	"github.com/admitc/admitc/compiler"
	kyvernofrontend "github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/internal/migrate"
	"github.com/admitc/admitc/internal/render"
	"github.com/admitc/admitc/ir"
)

// registry holds every backend, in output order.
var registry = []backends.Backend{vap.Backend{}, mapbackend.Backend{}, webhook.Backend{}, kyverno.ClusterPolicyBackend{}, kyverno.CELBackend{Autogen: migrate.SameAsReimport}, gatekeeper.Backend{},
	static.Backend{Validating: vap.Backend{}, Mutating: mapbackend.Backend{}, Webhook: webhook.Backend{}}}

// optIn are the backends "all" leaves out: Kyverno's CEL policy types cannot
// express parameters, so they are chosen explicitly (--backend kyverno-cel);
// gatekeeper is for clusters that run Gatekeeper; static manifests are
// installed on the control plane's disk, not applied, and cannot express
// parameters either (--backend static).
var optIn = map[string]bool{"kyverno-cel": true, "gatekeeper": true, "static": true}

// IRFile is the name of the serialised IR.
const IRFile = "ir.json"

// Names returns every backend name, in output order.
func Names() []string {
	out := make([]string, len(registry))
	for i, b := range registry {
		out[i] = b.Name()
	}
	return out
}

// File is one generated output.
type File struct {
	// Name is slash-separated: "vap.yaml", or for a backend whose output is a
	// directory tree, "static/validating-policies/manifests.yaml".
	Name string
	Data []byte
	// Header is the YAML comment line that opens the file's section when
	// several files are printed to one stream: it says what the section is
	// and which outputs to apply together.
	Header string
}

// applyNotes say which outputs enforce the same policies: VAP and MAP in the
// API server, the webhook through admitc serve, Kyverno through Kyverno.
// Applying two of them enforces every policy twice.
var applyNotes = map[string]string{
	IRFile:        "the compiled IR, for review only; not a Kubernetes object",
	"vap":         "enforced by the API server; apply vap and map OR the webhook backend, never both",
	"map":         "enforced by the API server; apply vap and map OR the webhook backend, never both",
	"webhook":     "enforced by admitc serve; apply this OR the vap and map backends, never both",
	"kyverno":     "for clusters running Kyverno; apply this instead of the other backends",
	"kyverno-cel": "for clusters running Kyverno; apply this instead of the other backends",
	"static":      "loaded by kube-apiserver from disk through --admission-control-config-file; never applied with kubectl",
}

// header is the section comment for a backend's (or ir.json's) output.
func header(name string) string {
	if name == IRFile {
		return "# --- " + IRFile + " (" + applyNotes[name] + ") ---\n"
	}
	return "# --- backend: " + name + " (" + applyNotes[name] + ") ---\n"
}

// Request says what to compile and how.
type Request struct {
	Sources  []compiler.Source
	Backends []string
	Options  backends.Options
	// WithIR adds ir.json to the files.
	WithIR bool
	// KeepGoing emits what can be emitted and lists what was skipped in
	// Result.Set.Skipped (see compiler.Options.KeepGoing).
	KeepGoing bool
	// KyvernoFilters, when set, leave out of every Kyverno policy what a
	// Kyverno installation keeps from its policies, in the output of every
	// backend but Kyverno's own (Kyverno applies its filters itself).
	KyvernoFilters *kyvernofrontend.Filters
	// Budget bounds what compiling each file may cost (see
	// compiler.Options.Budget); its zero value is the defaults.
	Budget compiler.Budget
	// CRDs make the kinds they define resolvable (see
	// compiler.Options.CRDs).
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// Result is the compiled set and its files, one per selected backend (a
// backend with nothing to emit has a file with no data).
type Result struct {
	Set   *ir.PolicySet
	Files []File
}

// Run compiles the sources and runs the selected backends. The files are
// generated from the portable copy of the set (origins by base name), so
// they do not depend on the working directory or the spelling of a path.
func Run(req Request) (*Result, diag.Diagnostics, error) {
	selected, err := Select(req.Backends)
	if err != nil {
		return nil, nil, err
	}
	set, diags := compiler.Compile(req.Sources, compiler.Options{KubeVersion: req.Options.KubeVersion, KeepGoing: req.KeepGoing, Budget: req.Budget, CRDs: req.CRDs})
	if len(diags) > 0 {
		return nil, diags, nil
	}
	if diags := coverage(set, selected); len(diags) > 0 {
		return nil, diags, nil
	}
	sets, err := targetSets(set, req)
	if err != nil {
		return nil, nil, err
	}
	portableSets, err := targetSets(portable(set), req)
	if err != nil {
		return nil, nil, err
	}
	files, diags, err := generateFiles(portableSets, selected, req)
	if err != nil {
		return nil, nil, err
	}
	if len(diags) > 0 {
		// Report at the paths as typed: run the backends on the set as compiled.
		if _, diags, err = generateFiles(sets, selected, req); err != nil {
			return nil, nil, err
		}
		diags.Sort()
		// Backends that refuse the same thing (a kind that did not resolve,
		// for vap and webhook) say it once.
		return nil, slices.CompactFunc(diags, func(a, b diag.Diagnostic) bool { return a.Origin == b.Origin && a.Message == b.Message }), nil
	}
	return &Result{Set: set, Files: files}, nil, nil
}

// kyvernoEnforced are the backends whose output Kyverno enforces, applying
// its own filters.
var kyvernoEnforced = map[string]bool{"kyverno": true, "kyverno-cel": true}

// backendSets are the sets a backend generates from: scoped to the
// namespaces asked for, and with Kyverno's filters applied for the
// backends Kyverno does not enforce; ir.json shows the set as compiled.
type backendSets struct{ compiled, kyverno, filtered *ir.PolicySet }

func (s backendSets) of(backend string) *ir.PolicySet {
	if kyvernoEnforced[backend] {
		return s.kyverno
	}
	return s.filtered
}

// targetSets scopes the imported policies to the namespaces asked for,
// after applying Kyverno's filters where they apply.
func targetSets(set *ir.PolicySet, req Request) (backendSets, error) {
	filtered := set
	if req.KyvernoFilters != nil {
		var err error
		if filtered, err = req.KyvernoFilters.Apply(set); err != nil {
			return backendSets{}, err
		}
	}
	scoped, err := backends.ScopedToNamespaces(set, req.Options.Namespaces)
	if err != nil {
		return backendSets{}, err
	}
	if filtered, err = backends.ScopedToNamespaces(filtered, req.Options.Namespaces); err != nil {
		return backendSets{}, err
	}
	return backendSets{set, scoped, filtered}, nil
}

// generateFiles runs the selected backends and renders one file each,
// after ir.json when asked for.
func generateFiles(sets backendSets, selected []backends.Backend, req Request) ([]File, diag.Diagnostics, error) {
	var files []File
	if req.WithIR {
		data, err := IRJSON(sets.compiled)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, File{Name: IRFile, Data: data, Header: header(IRFile)})
	}
	var diags diag.Diagnostics
	for _, b := range selected {
		out, bd := b.Generate(sets.of(b.Name()), req.Options)
		diags = append(diags, bd...)
		rendered, err := renderOutput(b.Name(), out)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, rendered...)
	}
	return files, diags, nil
}

// renderOutput renders a backend's output: NAME.yaml, or each file of its tree
// under NAME/, each with a header naming the file.
func renderOutput(name string, out backends.Output) ([]File, error) {
	if len(out.Files) == 0 {
		data, err := render.YAML(out.Objects)
		if err != nil {
			return nil, err
		}
		return []File{{Name: name + ".yaml", Data: data, Header: header(name)}}, nil
	}
	var files []File
	for _, f := range out.Files {
		data, err := render.YAML(f.Objects)
		if err != nil {
			return nil, err
		}
		p := path.Join(name, f.Path)
		files = append(files, File{Name: p, Data: data, Header: "# --- backend: " + name + ", file " + p + " (" + applyNotes[name] + ") ---\n"})
	}
	return files, nil
}

// IRJSON serialises the IR: indented, keys in struct order, newline-terminated.
func IRJSON(set *ir.PolicySet) ([]byte, error) {
	data, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Select resolves backend names ("all" is every backend) in output order.
func Select(names []string) ([]backends.Backend, error) {
	want := map[string]bool{}
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			if part = strings.TrimSpace(part); part != "" {
				want[part] = true
			}
		}
	}
	if len(want) == 0 || want["all"] {
		delete(want, "all")
		for _, b := range registry {
			if !optIn[b.Name()] {
				want[b.Name()] = true
			}
		}
	}
	var out []backends.Backend
	for _, b := range registry {
		if want[b.Name()] {
			out = append(out, b)
			delete(want, b.Name())
		}
	}
	if len(want) > 0 {
		var unknown []string
		for n := range want {
			unknown = append(unknown, n)
		}
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown backend %s (backends: all, %s)", strings.Join(unknown, ", "), strings.Join(Names(), ", "))
	}
	return out, nil
}

// coverage reports every policy that no selected backend expresses, with
// each backend's reason: a rule is never dropped silently.
func coverage(set *ir.PolicySet, selected []backends.Backend) diag.Diagnostics {
	var diags diag.Diagnostics
	for i := range set.Policies {
		p := &set.Policies[i]
		var reasons []string
		for _, b := range selected {
			why := b.Rejects(p)
			if why == "" {
				reasons = nil
				break
			}
			reasons = append(reasons, b.Name()+": "+why)
		}
		if len(reasons) > 0 {
			diags = append(diags, backends.Errorf(p.Origin, "%s policy %q cannot be expressed by the selected backends (%s)",
				strings.ToLower(string(p.Kind)), p.Name, strings.Join(reasons, "; ")))
		}
	}
	return diags
}
