// Package generate is admitc's compile pipeline: policy files → IR →
// every selected backend → one rendered file per backend. `admitc compile`,
// its shortcuts and the golden tests all run this one function, so what the
// golden files show is byte for byte what users get.
package generate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/backends/kyverno"
	mapbackend "github.com/admitc/admitc/backends/map"
	"github.com/admitc/admitc/backends/vap"
	"github.com/admitc/admitc/backends/webhook"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/internal/render"
	"github.com/admitc/admitc/ir"
)

// registry holds every backend, in output order.
var registry = []backends.Backend{vap.Backend{}, mapbackend.Backend{}, webhook.Backend{}, kyverno.ClusterPolicyBackend{}, kyverno.CELBackend{}}

// optIn are the backends "all" leaves out: Kyverno's CEL policy types cannot
// express parameters, so they are chosen explicitly (--backend kyverno-cel).
var optIn = map[string]bool{"kyverno-cel": true}

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
	Name string
	Data []byte
}

// Request says what to compile and how.
type Request struct {
	Sources  []compiler.Source
	Backends []string
	Options  backends.Options
	// WithIR adds ir.json to the files.
	WithIR bool
}

// Result is the compiled set and its files, one per selected backend (a
// backend with nothing to emit has a file with no data).
type Result struct {
	Set   *ir.PolicySet
	Files []File
}

// Run compiles the sources and runs the selected backends.
func Run(req Request) (*Result, diag.Diagnostics, error) {
	selected, err := Select(req.Backends)
	if err != nil {
		return nil, nil, err
	}
	set, diags := compiler.Compile(req.Sources, compiler.Options{KubeVersion: req.Options.KubeVersion})
	if len(diags) > 0 {
		return nil, diags, nil
	}
	if diags := coverage(set, selected); len(diags) > 0 {
		return nil, diags, nil
	}
	res := &Result{Set: set}
	if req.WithIR {
		data, err := IRJSON(set)
		if err != nil {
			return nil, nil, err
		}
		res.Files = append(res.Files, File{Name: IRFile, Data: data})
	}
	for _, b := range selected {
		out, bd := b.Generate(set, req.Options)
		diags = append(diags, bd...)
		data, err := render.YAML(out.Objects)
		if err != nil {
			return nil, nil, err
		}
		res.Files = append(res.Files, File{Name: b.Name() + ".yaml", Data: data})
	}
	if len(diags) > 0 {
		diags.Sort()
		return nil, diags, nil
	}
	return res, nil, nil
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
