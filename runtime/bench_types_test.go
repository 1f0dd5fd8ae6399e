package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

// BenchmarkValidateByPolicy is one validation of a typical pod per policy of
// the example set, to see where the time goes.
func BenchmarkValidateByPolicy(b *testing.B) {
	src, err := compiler.ReadSources([]string{examples + "policies/policies.json"})
	if err != nil {
		b.Fatal(err)
	}
	set, _ := compiler.Compile(src, compiler.Options{})
	pod := manifest(b, "manifests/good.json")
	for _, p := range set.Policies {
		one := *set
		one.Policies = append(one.Policies[:0:0], p)
		e, err := runtime.NewEngine(&one)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s", p.Name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Admit(context.Background(), runtime.RequestFor(pod, nil, "shop")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
