package compare

import (
	"context"
	"os"
	"testing"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/internal/upstream"
	"github.com/admitc/admitc/runtime"
)

// benchEngines holds the engines every build has; the kyverno build adds one.
var benchEngines = []func(b *testing.B, src []compiler.Source) Engine{
	func(b *testing.B, src []compiler.Source) Engine {
		set, diags := compiler.Compile(src, compiler.Options{})
		if len(diags) > 0 {
			b.Fatal(diags)
		}
		e, err := runtime.NewEngine(set)
		if err != nil {
			b.Fatal(err)
		}
		return Admitc{Engine: e}
	},
	func(b *testing.B, src []compiler.Source) Engine {
		objs, err := upstream.Parse("generated", generated(b, src, "vap", "map"))
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
	},
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

// BenchmarkDecision is one decision (mutation, then validation) for a
// typical pod under the example policy set, by each engine.
func BenchmarkDecision(b *testing.B) {
	src, err := compiler.ReadSources([]string{"../../examples/policies/policies.json"})
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/manifests/good.json")
	if err != nil {
		b.Fatal(err)
	}
	ms, err := runtime.DecodeManifests("good.json", data)
	if err != nil {
		b.Fatal(err)
	}
	for _, mk := range benchEngines {
		e := mk(b, src)
		b.Run(e.Name(), func(b *testing.B) {
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
