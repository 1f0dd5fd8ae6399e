package kyverno_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

// foreachRefusals has one mutate.foreach rule per refusal.
const foreachRefusals = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: foreach-refusals
spec:
  rules:
  - name: nested
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: element.ports
          patchesJson6902: |-
            - op: add
              path: /metadata/labels/x
              value: "y"
  - name: static-path
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchesJson6902: |-
          - op: remove
            path: /metadata/labels/x
  - name: index-last
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchesJson6902: |-
          - op: remove
            path: /spec/containers/{{elementIndex}}
  - name: list-and-map
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
              a: b
          spec:
            containers:
            - name: "{{ element.name }}"
              imagePullPolicy: Always
  - name: map-under-variable-key
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          metadata:
            annotations:
              images.example.com/{{ element.name }}:
                image: "{{ element.image }}"
`

// Every foreach mutation admitc cannot translate exactly is refused with
// its rule, field, place and reason.
func TestMutateForEachRefusals(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(foreachRefusals)}}, compiler.Options{KeepGoing: true})
	require.Empty(t, diags)
	var got []string
	for _, sk := range set.Skipped {
		got = append(got, fmt.Sprintf("%s:%d:%d %s %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.From.Rule, sk.Feature, sk.Reason))
	}
	assert.Equal(t, []string{
		"p.yaml:16:9 nested mutate.foreach nested: a nested foreach mutation patches the object each outer element's patch returned; not translated: keep this rule under Kyverno",
		"p.yaml:29:26 static-path mutate construct: a foreach entry's patchesJson6902 is translated when every path holds {{elementIndex}} once (the elements then patch disjoint parts of the object); rewrite the patch without it, or keep this rule under Kyverno",
		"p.yaml:40:26 index-last mutate construct: {{elementIndex}} as the last segment adds or removes list elements, which moves the next elements' indexes; not translated; rewrite the patch without it, or keep this rule under Kyverno",
		"p.yaml:52:11 list-and-map mutate construct: a foreach entry's patchStrategicMerge with a list is translated when the list, under its maps, is all it holds; rewrite the patch without it, or keep this rule under Kyverno",
		"p.yaml:70:15 map-under-variable-key mutate construct: a map under a key with {{ }} variables in a foreach entry is not translated (two elements may compute the same key); rewrite the patch without it, or keep this rule under Kyverno",
	}, got)
	assert.Empty(t, set.Policies)
}

// sequentialEntries labels the Pod from its first container, then
// annotates it from the label the first entry wrote.
const sequentialEntries = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: sequential
spec:
  rules:
  - name: label-then-annotate
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
              main: "{{ element.name }}"
      - list: request.object.metadata.labels.main
        patchStrategicMerge:
          metadata:
            annotations:
              seen: "{{ element }}-{{ elementIndex }}"
`

// A foreach entry reads the object the entries before it patched, and a
// patchStrategicMerge entry patches its elements last to first: the first
// container's name is the last written.
func TestMutateForEachEntriesReadThePatchedObject(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(sequentialEntries)}}, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	obj := pod(t, `{containers: [{name: a, image: x}, {name: b, image: y}]}`)
	res, err := e.Mutate(context.Background(), runtime.RequestFor(obj, nil, "default"))
	require.NoError(t, err)
	require.NotNil(t, res.Object)
	assert.Equal(t, map[string]string{"main": "a"}, res.Object.GetLabels())
	assert.Equal(t, map[string]string{"seen": "a-0"}, res.Object.GetAnnotations())
}
