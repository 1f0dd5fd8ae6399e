package mutate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
)

// Each overlay Kyverno would apply differently from the CEL is refused at
// its path, with the reason.
func TestStrategicMergeRefusals(t *testing.T) {
	cases := map[string]struct{ overlay, want string }{
		"null deletes":                {`{"metadata": {"labels": {"a": null}}}`, "patchStrategicMerge.metadata.labels.a: null in a strategic merge patch deletes the key; that is not translated"},
		"list of another kind":        {`{"spec": {"tolerations": [{"key": "a"}]}}`, "patchStrategicMerge.spec.tolerations: only the PodSpec lists containers, initContainers, ephemeralContainers, volumes and imagePullSecrets are translated (kustomize merges them by name); other lists depend on the kind's schema"},
		"validate anchor":             {`{"spec": {"=(hostNetwork)": false}}`, "patchStrategicMerge.spec.=(hostNetwork): the anchor =( is a validate anchor; Kyverno's mutate preprocessing does not read it"},
		"condition on a map":          {`{"spec": {"(securityContext)": {"runAsNonRoot": true}}}`, "patchStrategicMerge.spec.(securityContext): a condition on a map is kept in Kyverno's patch under its anchored key; only scalar conditions and {} are translated"},
		"condition in +()":            {`{"spec": {"+(securityContext)": {"(runAsUser)": 0}}}`, "patchStrategicMerge.spec.+(securityContext): conditions inside a +() anchor's value are checked against a copy Kyverno changes as it goes; not translated"},
		"unnamed plain element":       {`{"spec": {"containers": [{"image": "nginx"}]}}`, "patchStrategicMerge.spec.containers[0]: an element without anchors needs a literal name, the key kustomize merges it by"},
		"mixed anchors":               {`{"spec": {"containers": [{"<(image)": "a*", "(name)": "b"}]}}`, "patchStrategicMerge.spec.containers[0]: an element with both a global anchor and other anchors is not translated"},
		"list in an element":          {`{"spec": {"containers": [{"(name)": "*", "env": [{"name": "A"}]}]}}`, "patchStrategicMerge.spec.containers[0].env: a list inside a list element is not translated"},
		"directive":                   {`{"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}`, "patchStrategicMerge.spec.containers[0].$patch: strategic merge directives ($patch, $retainKeys, $setElementOrder...) are not translated"},
		"fraction":                    {`{"spec": {"replicas": 1.5}}`, "patchStrategicMerge.spec.replicas: a number that is not an integer is not translated (Kyverno writes it through YAML)"},
		"variable in condition":       {`{"metadata": {"(name)": "{{request.namespace}}"}}`, "patchStrategicMerge.metadata.(name): {{ }} variables and $( ) references in a condition are not translated"},
		"list under a variable key":   {`{"spec": {"x-{{request.namespace}}": [{"a": "b"}]}}`, "patchStrategicMerge.spec.x-{{request.namespace}}: a list under a key with {{ }} variables is not translated"},
		"anchor under a variable key": {`{"metadata": {"{{request.namespace}}": {"+(a)": "b"}}}`, "patchStrategicMerge.metadata.{{request.namespace}}: anchors under a key with {{ }} variables are not translated"},
		"variable key in an element":  {`{"spec": {"containers": [{"name": "a", "x-{{request.namespace}}": "y"}]}}`, "patchStrategicMerge.spec.containers[0].x-{{request.namespace}}: a key with {{ }} variables inside a list element is not translated"},
		"anchored variable key":       {`{"metadata": {"labels": {"+({{request.namespace}})": "y"}}}`, "patchStrategicMerge.metadata.labels.+({{request.namespace}}): an anchor on a key with {{ }} variables is not translated"},
		"escaped braces in a key":     {`{"metadata": {"labels": {"a-\\{{b}}": "y"}}}`, `patchStrategicMerge.metadata.labels.a-\{{b}}: an escaped \{{ in a key is not translated (Kyverno renames the key while it walks the map, and may substitute the renamed key again)`},
		"key variable not translated": {`{"metadata": {"labels": {"a-{{@}}": "y"}}}`, "patchStrategicMerge.metadata.labels.a-{{@}}: the {{@}} variable is not translated; rewrite it with the JMESPath subset admitc translates (docs/kyverno-pattern-translation.md), or keep the rule under Kyverno"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var overlay any
			require.NoError(t, json.Unmarshal([]byte(c.overlay), &overlay))
			_, err := TranslateStrategicMerge(overlay)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

func TestJSON6902Refusals(t *testing.T) {
	cases := map[string]struct{ doc, want string }{
		"move":           {"- op: move\n  from: /a\n  path: /b", `patchesJson6902[0].op: the operation "move" is not translated (add, replace and remove are)`},
		"negative index": {"- op: add\n  path: /spec/containers/-1/image\n  value: x", "patchesJson6902[0].path: negative list indexes are not translated"},
		"dash above end": {"- op: add\n  path: /spec/containers/-/image\n  value: x", `patchesJson6902[0].path: "-" above the last segment is not translated`},
		"variables":      {"- op: add\n  path: /metadata/labels/a\n  value: '{{request.namespace}}'", "patchesJson6902: {{ }} variables in patchesJson6902 are substituted in the text before it is parsed; not translated"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := JSON6902(c.doc)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

// An add creates the parents the object lacks (or holds null), as
// json-patch's EnsurePathExistsOnAdd does: a list padded with nulls up to
// an index, a map otherwise.
func TestJSON6902AddCreatesParents(t *testing.T) {
	e, err := JSON6902("- op: add\n  path: /spec/tolerations/2\n  value: x")
	require.NoError(t, err)
	assert.Contains(t, e, "[JSONPatch{op: 'add', path: '/spec', value: {'tolerations': [null, null, 'x']}}]")
	assert.Contains(t, e, "[JSONPatch{op: 'add', path: '/spec/tolerations', value: [null, null, 'x']}]")
	assert.Contains(t, e, "[JSONPatch{op: 'add', path: '/spec/tolerations/2', value: 'x'}]")
	assert.Contains(t, e, "object['spec'] != null")
}

// A map value is written as CEL only with literal keys: a key with {{ }}
// variables in it is refused at its path.
func TestValueRefusesVariableKeys(t *testing.T) {
	_, err := value(map[string]any{"a": "b", "x-{{request.namespace}}": "y"}, "patchesJson6902[0].value", conditions.Scope{}, new(int))
	require.Error(t, err)
	assert.Equal(t, "patchesJson6902[0].value.x-{{request.namespace}}: a key with {{ }} variables in a value is not translated", err.Error())
}
