package runtime

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDiffEscapesAndOrders(t *testing.T) {
	from := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1"}}, "list": []any{"x", "y", "z"}}}
	to := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1", "cloudcaptain.io/mutated-by": "admitc", "t~x": "y"}}, "list": []any{"x"}}}
	ops, err := Diff(from, to)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(ops)
	want := `[{"op":"remove","path":"/list/2"},{"op":"remove","path":"/list/1"},{"op":"add","path":"/metadata/labels/cloudcaptain.io~1mutated-by","value":"admitc"},{"op":"add","path":"/metadata/labels/t~0x","value":"y"}]`
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// FuzzDiff checks patch generation: for any two JSON objects, applying
// Diff(a, b) to a yields b, and diffing b with itself is empty.
func FuzzDiff(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,2,3]}`), []byte(`{"a":2,"b":[1],"c/d":{"e~f":null}}`))
	f.Add([]byte(`{"spec":{"containers":[{"name":"web"}]}}`), []byte(`{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"100m"}}}]}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var am, bm map[string]any
		if json.Unmarshal(a, &am) != nil || json.Unmarshal(b, &bm) != nil || am == nil || bm == nil {
			return
		}
		ops, err := Diff(&unstructured.Unstructured{Object: am}, &unstructured.Unstructured{Object: bm})
		if err != nil {
			t.Fatal(err)
		}
		patchJSON, err := json.Marshal(ops)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatch.DecodePatch(patchJSON)
		if err != nil {
			t.Fatalf("invalid patch %s: %v", patchJSON, err)
		}
		aJSON, _ := json.Marshal(am)
		out, err := patch.Apply(aJSON)
		if err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", patchJSON, aJSON, err)
		}
		var got, want any
		_ = json.Unmarshal(out, &got)
		bJSON, _ := json.Marshal(bm)
		_ = json.Unmarshal(bJSON, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("patch %s turned %s into %s, want %s", patchJSON, aJSON, out, bJSON)
		}
		self, _ := Diff(&unstructured.Unstructured{Object: bm}, &unstructured.Unstructured{Object: bm})
		if len(self) != 0 {
			t.Fatalf("diff of an object with itself is %v", self)
		}
	})
}
