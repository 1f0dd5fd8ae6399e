package runtime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// FuzzFastPath feeds arbitrary objects to both evaluation paths under the
// example policies (admitc's own format with parameters, a Kyverno
// ClusterPolicy, a Gatekeeper template and constraint): any difference in what a review
// returns is a failure.
func FuzzFastPath(f *testing.F) {
	var paths []string
	for _, pattern := range []string{"../examples/policies/*", "../examples/kyverno/restrict-seccomp/policy.yaml", "../examples/gatekeeper/allowed-repos/t*.yaml", "../examples/gatekeeper/allowed-repos/c*.yaml"} {
		m, _ := filepath.Glob(pattern)
		paths = append(paths, m...)
	}
	src, err := compiler.ReadSources(paths)
	if err != nil {
		f.Fatal(err)
	}
	set, diags := compiler.Compile(src, compiler.Options{})
	if len(diags) > 0 {
		f.Fatal(diags)
	}
	fast, err := runtime.NewEngine(set)
	if err != nil {
		f.Fatal(err)
	}
	ref := fast.OnPath(runtime.ReferencePath)
	seeds, _ := filepath.Glob("../examples/manifests/*.json")
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, op uint8) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		if _, ok := obj["kind"].(string); !ok {
			obj["apiVersion"], obj["kind"] = "v1", "Pod"
		}
		u := &unstructured.Unstructured{Object: obj}
		var req *runtime.Request
		switch op % 3 {
		case 0:
			req = runtime.RequestFor(u, nil, "shop")
		case 1:
			req = runtime.RequestFor(u, u.DeepCopy(), "shop")
		default:
			req = runtime.RequestFor(u, nil, "shop")
			req.Operation, req.OldObject, req.Object = ir.Delete, req.Object, nil
		}
		if want, got := decide(t, ref, req), decide(t, fast, req); want != got {
			t.Fatalf("the fast path decided\n%s\nthe reference path\n%s", got, want)
		}
	})
}
