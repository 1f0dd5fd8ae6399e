package pattern

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPatternValueFailureFailsTheRule: Kyverno substitutes every value of
// the pattern before it matches, so a variable that does not resolve
// fails the rule even where the pattern would not reach the value (a
// missing labels map) or never compares it (a negation anchor's value).
func TestPatternValueFailureFailsTheRule(t *testing.T) {
	for name, pattern := range map[string]map[string]any{
		"unreached": {"metadata": map[string]any{"labels": map[string]any{"app": "{{ request.object.metadata.name }}"}}},
		"negation":  {"metadata": map[string]any{"X(generateName)": "{{ request.object.metadata.name }}"}},
	} {
		e, err := TranslateWith(pattern, "object", func(string) (string, error) { return "object.metadata.name", nil })
		require.NoError(t, err, name)
		eval := compileString(t, e.Result)
		_, err = eval(map[string]any{"metadata": map[string]any{"generateName": "web-"}})
		require.Error(t, err, "%s: the value is read before the pattern", name)
		got, err := eval(map[string]any{"metadata": map[string]any{"name": "web"}})
		require.NoError(t, err, name)
		assert.Equal(t, map[string]string{"unreached": "fail /metadata/labels/", "negation": "pass"}[name], got, name)
	}
}

// TestPatternValuesAreRefusedWithoutResolve: Translate, which has no
// request to read them from, refuses {{ }} values as before; keys with
// variables are refused either way.
func TestPatternValuesAreRefusedWithoutResolve(t *testing.T) {
	_, err := Translate(map[string]any{"metadata": map[string]any{"name": "{{ request.namespace }}"}}, "object")
	require.EqualError(t, err, "pattern.metadata.name: variables {{ }} in pattern values are not translated")
	_, err = TranslateWith(map[string]any{"metadata": map[string]any{"labels": map[string]any{"{{ request.namespace }}": "?*"}}}, "object",
		func(string) (string, error) { return "request.namespace", nil })
	require.ErrorContains(t, err, "variables in pattern keys are not translated")
}
