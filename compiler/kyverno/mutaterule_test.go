package kyverno_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// mutatePolicy has one rule admitc translates and one per refusal.
const mutatePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mutations
spec:
  rules:
  - name: default-requests
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        spec:
          containers:
          - (name): "*"
            resources:
              requests:
                +(memory): 100Mi
  - name: per-container
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          metadata:
            labels:
              +(seen): "true"
  - name: delete-label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            team: null
  - name: tolerations
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        spec:
          tolerations:
          - key: dedicated
            operator: Exists
  - name: json-move
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    mutate:
      patchesJson6902: |-
        - op: move
          from: /data/a
          path: /data/b
`

// Every refused mutate rule is named with its field, place and reason; the
// rule admitc translates still compiles.
func TestMutateRefusalsNameRuleFieldAndPlace(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(mutatePolicy)}}, compiler.Options{KeepGoing: true})
	require.Empty(t, diags)
	var got []string
	for _, sk := range set.Skipped {
		if sk.From.Rule[:min(8, len(sk.From.Rule))] == "autogen-" {
			continue
		}
		got = append(got, fmt.Sprintf("%s:%d:%d %s %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.From.Rule, sk.Feature, sk.Reason))
	}
	assert.Equal(t, []string{
		"p.yaml:29:11 per-container mutate construct: anchors in a foreach entry's patchStrategicMerge are not translated (each element's preprocessing sees the object the previous element patched); rewrite the patch without it, or keep this rule under Kyverno",
		"p.yaml:41:19 delete-label mutate construct: null in a strategic merge patch deletes the key; that is not translated; rewrite the patch without it, or keep this rule under Kyverno",
		"p.yaml:51:11 tolerations mutate construct: only the PodSpec lists containers, initContainers, ephemeralContainers, volumes and imagePullSecrets are translated (kustomize merges them by name); other lists depend on the kind's schema; rewrite the patch without it, or keep this rule under Kyverno",
		"p.yaml:59:24 json-move mutate construct: the operation \"move\" is not translated (add, replace and remove are); rewrite the patch without it, or keep this rule under Kyverno",
	}, got)
	var names []string
	for _, p := range set.Policies {
		assert.Equal(t, ir.Mutating, p.Kind, p.Name)
		names = append(names, p.Name)
	}
	// A patchesJson6902 rule turns autogen off for the whole policy, as
	// Kyverno's CanAutoGen does.
	assert.Equal(t, []string{"mutations.default-requests"}, names)
}

// A +() key inside a list element is decided by the first element of the
// object that reaches its map, as Kyverno's shared copy of the element
// decides it: the first container has a memory request, so no container
// gets one; the patch changes nothing and the runtime reports it unchanged.
func TestMutateAddAnchorInListIsDecidedByTheFirstElement(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(mutatePolicy)}}, compiler.Options{KeepGoing: true})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	cases := map[string]struct {
		spec string
		want []any // each container's requests
	}{
		"none has one":   {`{containers: [{name: a, image: x}, {name: b, image: y}]}`, []any{map[string]any{"memory": "100Mi"}, map[string]any{"memory": "100Mi"}}},
		"first has one":  {`{containers: [{name: a, image: x, resources: {requests: {memory: 1Gi}}}, {name: b, image: y}]}`, []any{map[string]any{"memory": "1Gi"}, nil}},
		"second has one": {`{containers: [{name: a, image: x}, {name: b, image: y, resources: {requests: {memory: 1Gi}}}]}`, []any{map[string]any{"memory": "100Mi"}, map[string]any{"memory": "100Mi"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			obj := pod(t, c.spec)
			res, err := e.Mutate(context.Background(), runtime.RequestFor(obj, nil, "default"))
			require.NoError(t, err)
			require.NotNil(t, res.Object)
			containers, _, _ := unstructured.NestedSlice(res.Object.Object, "spec", "containers")
			var got []any
			for _, c := range containers {
				r, _, _ := unstructured.NestedFieldNoCopy(c.(map[string]any), "resources", "requests")
				got = append(got, r)
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// A boolean or a number patched over a string of the object stays a
// string, as kustomize's merge in Kyverno writes it (the object's string
// node keeps its quoted style); over anything else it is the value.
func TestMutateScalarOverAStringIsWrittenAsText(t *testing.T) {
	src := podRule(`    mutate:
      patchStrategicMerge:
        metadata:
          annotations:
            replicas: 3
            enabled: true
            from: "{{ request.object.spec.priority }}"
`)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	for annotations, want := range map[string]map[string]any{
		`{replicas: "1", enabled: "no", from: "x"}`: {"replicas": "3", "enabled": "true", "from": "7"},
		`{replicas: 1, enabled: false, from: 2}`:    {"replicas": int64(3), "enabled": true, "from": int64(7)},
		`{}`:                                        {"replicas": int64(3), "enabled": true, "from": int64(7)},
	} {
		obj := pod(t, `{priority: 7, containers: [{name: a, image: x}]}`)
		var a map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(annotations), &a))
		obj.Object["metadata"].(map[string]any)["annotations"] = a
		res, err := e.Mutate(context.Background(), runtime.RequestFor(obj, nil, "default"))
		require.NoError(t, err)
		require.NotNil(t, res.Object, annotations)
		got, _, _ := unstructured.NestedMap(res.Object.Object, "metadata", "annotations")
		assert.Equal(t, want, got, annotations)
	}
}
