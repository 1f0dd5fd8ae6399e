package compare

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/internal/upstream"
	"github.com/admitc/admitc/runtime"
)

// benchSet is a policy set every engine runs: admitc's own policies
// (generated for the other engines) and Kyverno ClusterPolicies (read by
// admitc, translated for the API server, run as written by Kyverno).
type benchSet struct {
	name    string
	own     []string
	kyverno []string
}

// benchSets are the example set and a set of about 50 policies: the
// examples plus Pod Security Standards and best-practice ClusterPolicies
// (validate.cel and pattern rules).
func benchSets(b *testing.B) []benchSet {
	pattern, err := filepath.Glob("../../examples/kyverno-pattern/*/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	celRules, err := filepath.Glob("../../examples/kyverno/*/policy.yaml")
	if err != nil {
		b.Fatal(err)
	}
	// A policy written both ways (pattern and cel) is taken once, as a pattern.
	var cluster []string
	seen := map[string]bool{}
	for _, f := range append(pattern, celRules...) {
		if name := filepath.Base(filepath.Dir(f)); seen[name] {
			continue
		} else {
			seen[name] = true
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(data), "\nkind: ClusterPolicy\n") || strings.HasPrefix(string(data), "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\n") {
			cluster = append(cluster, f)
		}
	}
	own := []string{"../../examples/policies/policies.json"}
	return []benchSet{{name: "examples", own: own}, {name: "pss", own: own, kyverno: cluster}}
}

// benchEngine builds one engine on a set.
type benchEngine struct {
	name string
	make func(b *testing.B, s benchSet) Engine
}

// benchEngines are the engines every build has; the kyverno build adds one.
var benchEngines = []benchEngine{
	{"admitc-fast", func(b *testing.B, s benchSet) Engine { return admitcEngine(b, s, runtime.FastPath) }},
	{"admitc-reference", func(b *testing.B, s benchSet) Engine { return admitcEngine(b, s, runtime.ReferencePath) }},
	{"kubernetes-plugins", func(b *testing.B, s benchSet) Engine {
		objs, err := upstream.Parse("generated", generated(b, sources(b, append(s.own, s.kyverno...)), "vap", "map"))
		if err != nil {
			b.Fatal(err)
		}
		objs.Namespaces = map[string]map[string]string{"shop": nil}
		e, err := upstream.New(objs)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(e.Close)
		return Upstream{Engine: e}
	}},
}

func admitcEngine(b *testing.B, s benchSet, path runtime.Path) Engine {
	set, diags := compiler.Compile(sources(b, append(s.own, s.kyverno...)), compiler.Options{})
	if len(diags) > 0 {
		b.Fatal(diags)
	}
	e, err := runtime.NewEngine(set, runtime.WithPath(path))
	if err != nil {
		b.Fatal(err)
	}
	return Admitc{Engine: e}
}

func sources(b *testing.B, paths []string) []compiler.Source {
	src, err := compiler.ReadSources(paths)
	if err != nil {
		b.Fatal(err)
	}
	return src
}

func generated(b *testing.B, src []compiler.Source, names ...string) []byte {
	res, diags, err := generate.Run(generate.Request{Sources: src, Backends: names, Options: backends.Options{Namespaces: []string{"shop"}}})
	if err != nil || len(diags) > 0 {
		b.Fatal(err, diags)
	}
	var out []byte
	for _, f := range res.Files {
		if len(f.Data) > 0 {
			if len(out) > 0 {
				out = append(out, "---\n"...)
			}
			out = append(out, f.Data...)
		}
	}
	return out
}

// BenchmarkDecision is one admission decision (mutation, then validation)
// for a typical pod, by each engine, on each policy set: make bench prints
// them as one table.
func BenchmarkDecision(b *testing.B) {
	data, err := os.ReadFile("../../examples/manifests/good.json")
	if err != nil {
		b.Fatal(err)
	}
	ms, err := runtime.DecodeManifests("good.json", data)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range benchSets(b) {
		for _, mk := range benchEngines {
			b.Run(s.name+"/"+mk.name, func(b *testing.B) {
				e := mk.make(b, s)
				goruntime.GC() // the engine's construction garbage is not the decision's
				b.ReportAllocs()
				for b.Loop() {
					obj := ms[0].Object.DeepCopy()
					if _, err := e.Admit(context.Background(), obj, "shop"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
