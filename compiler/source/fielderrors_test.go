package source

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const binding = `kind: ValidatingAdmissionPolicyBinding
spec:
  validationActions: [deny, Deny]
  paramRef:
    name: limits
    selector:
      matchLabels: {team: a}
`

func doc(t *testing.T, text string) *Doc {
	t.Helper()
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(text), &n))
	return &Doc{File: "b.yaml", Root: n.Content[0]}
}

// TestFieldErrors: each upstream error is placed at its field (a scalar or
// list item at its value, a block mapping at its key, a missing field at
// the key of the nearest field the document holds), with the refusing
// party and the field's advice, else its type's, else none.
func TestFieldErrors(t *testing.T) {
	d := doc(t, binding)
	errs := field.ErrorList{
		field.NotSupported(field.NewPath("spec", "validationActions").Index(0), "deny", []string{"Audit", "Deny", "Warn"}),
		field.Forbidden(field.NewPath("spec", "paramRef", "selector"), "name and selector are mutually exclusive"),
		field.Required(field.NewPath("spec", "paramRef", "parameterNotFoundAction"), ""),
		field.Invalid(field.NewPath("spec", "paramRef", "selector", "matchExpressions").Index(0).Child("operator"), "in", "not a valid selector operator"),
		field.Invalid(field.NewPath("spec"), map[string]string{"a": "long value that is left out of the message because it says nothing the field does not: it is the whole object and more"}, "bad spec"),
	}
	got := d.FieldErrors(errs, Refusal{By: "the API server refuses this", Fixes: map[string]string{"spec.paramRef.parameterNotFoundAction": "say Deny or Allow"}})
	want := []string{
		`b.yaml:3:23: spec.validationActions[0]: Unsupported value: "deny": supported values: "Audit", "Deny", "Warn" (the API server refuses this; write one of the supported values, spelled as shown: case matters)`,
		`b.yaml:6:5: spec.paramRef.selector: Forbidden: name and selector are mutually exclusive (the API server refuses this)`,
		`b.yaml:4:3: spec.paramRef.parameterNotFoundAction: Required value (the API server refuses this; say Deny or Allow)`,
		`b.yaml:6:5: spec.paramRef.selector.matchExpressions[0].operator: Invalid value: "in": not a valid selector operator (the API server refuses this; use In, NotIn, Exists or DoesNotExist)`,
		`b.yaml:2:1: spec: Invalid value: bad spec (the API server refuses this)`,
	}
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i], got[i].String())
	}
}

// TestObject: a document decodes as a JSON request body does, with int64
// and float64 numbers.
func TestObject(t *testing.T) {
	obj, err := doc(t, "spec:\n  webhookTimeoutSeconds: 45\n  ratio: 0.5\n").Object()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"spec": map[string]any{"webhookTimeoutSeconds": int64(45), "ratio": 0.5}}, obj)
}
