package runtime_test

import (
	"context"
	"testing"

	"github.com/admitc/admitc/runtime"
)

// BenchmarkAdmitPod is one admission decision (mutations, then validation)
// for a typical pod under the full example policy set, compiled once.
func BenchmarkAdmitPod(b *testing.B) {
	e := engineFor(b, "policies.json")
	pod := manifest(b, "manifests/good.json")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Admit(ctx, runtime.RequestFor(pod, nil, "shop")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidatePod is validation alone, as the webhook's /validate does.
func BenchmarkValidatePod(b *testing.B) {
	e := engineFor(b, "policies.json")
	pod := manifest(b, "manifests/good.json")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Validate(ctx, runtime.RequestFor(pod, nil, "shop")); err != nil {
			b.Fatal(err)
		}
	}
}
