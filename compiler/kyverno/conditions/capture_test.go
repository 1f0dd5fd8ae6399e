package conditions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Under Capture, a key Kyverno cannot resolve is the UnknownKey value
// instead of an evaluation error; everything else reads as without it.
func TestCaptureGivesUnknownKeyForMissingKeys(t *testing.T) {
	obj := `{spec: {containers: [{name: a}], initContainers: null}}`
	cases := map[string]string{
		"request.object.spec.containers[0].name":                                       "a",
		"request.object.spec.missing":                                                  "unknown",
		"request.object.spec.missing.deeper":                                           "unknown",
		"request.object.spec.initContainers.name":                                      "<nil>",
		"request.object.spec.[ephemeralContainers, initContainers, containers][].name": "[a]",
		"request.object.missing.[a, b]":                                                "unknown",
		"request.object.spec.containers[].name":                                        "[a]",
	}
	for q, want := range cases {
		t.Run(q, func(t *testing.T) {
			fresh := 0
			c, err := Query(q, Scope{Capture: true}, &fresh)
			require.NoError(t, err)
			out, err := evalCEL(t, "string("+IsUnknownKey("dyn("+c+")")+" ? 'unknown' : "+jsonOrNil(c)+")", obj, "CREATE")
			require.NoError(t, err)
			assert.Equal(t, want, out)
		})
	}
}

func jsonOrNil(c string) string {
	return "[dyn(" + c + ")].map(r, r == null ? '<nil>' : type(r) == list ? '[' + r.join(',') + ']' : string(r))[0]"
}

func TestCaptureRefusesFunctions(t *testing.T) {
	fresh := 0
	_, err := Query("length(request.object.spec.containers)", Scope{Capture: true}, &fresh)
	assert.EqualError(t, err, `JMESPath "length(request.object.spec.containers)": function length() is not translated where Kyverno handles an evaluation error itself (a foreach list or precondition skips the entry or the element; a context variable with a default takes the default), and a function's error is one CEL cannot catch; compute it in the rule's deny conditions or a context variable without a default, or keep the rule under Kyverno`)
}

// Outcome follows Kyverno's order: an error before the deciding condition
// is the block's error, one after it is never reached.
func TestOutcomeEvaluatesInKyvernosOrder(t *testing.T) {
	obj := `{metadata: {name: web}, spec: {replicas: 3}}`
	cases := map[string]string{
		"any holds":                 `{any: [{key: "{{request.object.spec.replicas}}", operator: Equals, value: 3}]}`,
		"any error first":           `{any: [{key: "{{request.object.spec.missing}}", operator: Equals, value: 3}, {key: a, operator: Equals, value: a}]}`,
		"any error after true":      `{any: [{key: a, operator: Equals, value: a}, {key: "{{request.object.spec.missing}}", operator: Equals, value: 3}]}`,
		"all false then error":      `{all: [{key: a, operator: Equals, value: b}, {key: "{{request.object.spec.missing}}", operator: Equals, value: 3}]}`,
		"any false, all error":      `{any: [{key: a, operator: Equals, value: b}], all: [{key: "{{request.object.spec.missing}}", operator: Equals, value: 3}]}`,
		"any false, all true":       `{any: [{key: a, operator: Equals, value: b}], all: [{key: a, operator: Equals, value: a}]}`,
		"error in text":             `{all: [{key: "{{request.object.metadata.name}}-{{request.object.spec.missing}}", operator: Equals, value: x}]}`,
		"error in a list value":     `{all: [{key: a, operator: AnyIn, value: ["{{request.object.spec.missing}}"]}]}`,
		"default for a missing key": `{all: [{key: "{{request.object.spec.missing || 'x'}}", operator: Equals, value: x}]}`,
	}
	want := map[string]string{
		"any holds": "true", "any error first": "error", "any error after true": "true", "all false then error": "false",
		"any false, all error": "error", "any false, all true": "false", "error in text": "error", "error in a list value": "error",
		"default for a missing key": "true",
	}
	for name, cond := range cases {
		t.Run(name, func(t *testing.T) {
			var raw any
			require.NoError(t, yaml.Unmarshal([]byte(cond), &raw))
			c, err := Decode(raw)
			require.NoError(t, err)
			fresh := 0
			e, err := Outcome(c, Scope{}, &fresh)
			require.NoError(t, err)
			out, err := evalCEL(t, e, obj, "CREATE")
			require.NoError(t, err)
			assert.Equal(t, want[name], out)
		})
	}
}

func TestLoopsNameNestedElements(t *testing.T) {
	fresh := 0
	s := Scope{Element: "'inner'", ElementIndex: "1.0", Loops: []Loop{{Element: "'outer'", Index: "0.0"}, {Element: "'inner'", Index: "1.0"}}}
	c, err := Message("{{element0}}/{{element1}}/{{element}} {{elementIndex0}} {{elementIndex1}} {{ request.name }}", s, &fresh)
	require.NoError(t, err)
	out, err := evalCEL(t, c, `{}`, "CREATE")
	require.NoError(t, err)
	assert.Equal(t, "outer/inner/inner 0 1 web", out)
}
