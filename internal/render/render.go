// Package render writes Kubernetes objects as deterministic YAML: the same
// objects always give the same bytes. It is the one place admitc renders
// YAML, so every backend's output looks alike.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"

	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"
)

// YAML renders objects as one multi-document YAML stream ("---" between
// documents). Objects are rendered on every core: a policy set of a
// thousand policies is thousands of objects, and each renders alone.
func YAML(objs []runtime.Object) ([]byte, error) {
	docs := make([][]byte, len(objs))
	errs := make([]error, len(objs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(objs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(objs); i = int(next.Add(1)) - 1 {
				docs[i], errs[i] = Object(objs[i])
			}
		}()
	}
	wg.Wait()
	var buf bytes.Buffer
	for i, doc := range docs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(doc)
	}
	return buf.Bytes(), nil
}

// Object renders one object as YAML with keys sorted (as sigs.k8s.io/yaml
// writes them), without a null creationTimestamp (at any depth: pod
// templates carry one too) and without a status: status is written by the
// cluster, never by a manifest, and typed objects serialise one even when it
// is empty (a Service's loadBalancer, a PodDisruptionBudget's counters).
func Object(obj runtime.Object) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	v, err := decodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "status")
	}
	withoutNullTimestamps(v)
	return yaml.Marshal(numbers(v))
}

// jsonToYAML is sigs.k8s.io/yaml's JSONToYAML with the JSON read by
// encoding/json instead of a YAML parser (the slow half of JSONToYAML):
// numbers keep their type as go-yaml would resolve them (int, then uint64,
// then float64), and go-yaml writes the value, keys sorted, as before.
func jsonToYAML(data []byte) ([]byte, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(numbers(v))
}

// decodeJSON reads one JSON value, numbers as json.Number.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// withoutNullTimestamps drops every creationTimestamp that is null, at any
// depth.
func withoutNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if t, ok := v["creationTimestamp"]; ok && t == nil {
			delete(v, "creationTimestamp")
		}
		for _, x := range v {
			withoutNullTimestamps(x)
		}
	case []any:
		for _, x := range v {
			withoutNullTimestamps(x)
		}
	}
}

// numbers replaces every json.Number with the Go number go-yaml would
// have parsed it into.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = numbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = numbers(x)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 0); err == nil {
			return int(i)
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return string(v)
	}
	return v
}
