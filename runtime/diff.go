package runtime

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PatchOp is one RFC 6902 operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// EscapePointer escapes one RFC 6901 reference token: ~ as ~0, / as ~1.
func EscapePointer(token string) string { return pointerEscaper.Replace(token) }

// Diff returns the RFC 6902 patch that turns from into to. Object keys are
// visited in sorted order, so the same change always gives the same bytes;
// list tails are removed from the end so indices stay valid.
func Diff(from, to *unstructured.Unstructured) ([]PatchOp, error) {
	a, err := normalise(from.Object)
	if err != nil {
		return nil, err
	}
	b, err := normalise(to.Object)
	if err != nil {
		return nil, err
	}
	return diffValue(a, b, "", nil), nil
}

// normalise round-trips through JSON so numbers compare alike (float64).
func normalise(obj map[string]any) (any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	return out, nil
}

func diffValue(a, b any, path string, ops []PatchOp) []PatchOp {
	switch at := a.(type) {
	case map[string]any:
		if bt, ok := b.(map[string]any); ok {
			return diffMap(at, bt, path, ops)
		}
	case []any:
		if bt, ok := b.([]any); ok {
			return diffList(at, bt, path, ops)
		}
	}
	if !reflect.DeepEqual(a, b) {
		ops = append(ops, PatchOp{Op: "replace", Path: path, Value: b})
	}
	return ops
}

func diffMap(a, b map[string]any, path string, ops []PatchOp) []PatchOp {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := path + "/" + EscapePointer(k)
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inA:
			ops = append(ops, PatchOp{Op: "add", Path: p, Value: bv})
		case !inB:
			ops = append(ops, PatchOp{Op: "remove", Path: p})
		default:
			ops = diffValue(av, bv, p, ops)
		}
	}
	return ops
}

func diffList(a, b []any, path string, ops []PatchOp) []PatchOp {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ops = diffValue(a[i], b[i], path+"/"+strconv.Itoa(i), ops)
	}
	for i := len(a) - 1; i >= n; i-- {
		ops = append(ops, PatchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	for i := n; i < len(b); i++ {
		ops = append(ops, PatchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: b[i]})
	}
	return ops
}

// MarshalJSON writes value for add, replace and test even when it is null.
func (o PatchOp) MarshalJSON() ([]byte, error) {
	type plain struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(plain(o))
}
