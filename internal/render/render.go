// Package render writes Kubernetes objects as deterministic YAML: the same
// objects always give the same bytes. It is the one place admitc renders
// YAML, so every backend's output looks alike.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// YAML renders objects as one multi-document YAML stream ("---" between
// documents).
func YAML(objs []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range objs {
		doc, err := Object(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(doc)
	}
	return buf.Bytes(), nil
}

// Server-side fields that typed objects serialise although they are empty.
// In JSON a quote inside a string is escaped, so these byte sequences can
// only be keys, never parts of a value.
var (
	nullTimestamp = []byte(`"creationTimestamp":null`)
	emptyStatus   = []byte(`"status":{}`)
)

// Object renders one object as YAML with fields in the API's order (the Go
// struct order, as kubectl prints them), without a null creationTimestamp
// (at any depth: pod templates carry one too) or an empty status.
func Object(obj runtime.Object) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	for _, drop := range [][]byte{nullTimestamp, emptyStatus} {
		data = bytes.ReplaceAll(data, append(append([]byte(nil), drop...), ','), nil)
		data = bytes.ReplaceAll(data, append([]byte{','}, drop...), nil)
		data = bytes.ReplaceAll(data, drop, nil)
	}
	return yaml.JSONToYAML(data)
}
