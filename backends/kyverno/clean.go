package kyverno

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// cleaned turns a typed Kyverno object into the object to write: without a
// status (Kyverno's types serialise a non-empty one) and without the empty
// deprecated match.resources that Kyverno's Go types always carry.
func cleaned(obj runtime.Object) (runtime.Object, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	dropEmptyResources(m)
	return &unstructured.Unstructured{Object: m}, nil
}

func dropEmptyResources(v any) {
	switch t := v.(type) {
	case map[string]any:
		if r, ok := t["resources"].(map[string]any); ok && len(r) == 0 {
			delete(t, "resources")
		}
		for _, c := range t {
			dropEmptyResources(c)
		}
	case []any:
		for _, c := range t {
			dropEmptyResources(c)
		}
	}
}
