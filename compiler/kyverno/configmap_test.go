package kyverno_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// A configMap context entry is read as the policy's params: paramKind v1
// ConfigMap, a binding whose paramRef names the ConfigMap (Deny when the
// rule is Enforce, as Kyverno blocks on the rule's error; Allow when it is
// Audit, as Kyverno admits), and cm.data.KEY read from params.data.
func TestConfigMapContext(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n"},
		"data":     map[string]any{"names": "blocked,forbidden"},
	}}
	cases := map[string]struct {
		action  string
		params  []*unstructured.Unstructured
		name    string
		allowed bool
		denial  string
	}{
		"a name the ConfigMap lists":             {"Enforce", []*unstructured.Unstructured{cm}, "forbidden", false, "[r.rule] validation error: rule rule failed"},
		"a name it does not list":                {"Enforce", []*unstructured.Unstructured{cm}, "web", true, ""},
		"Enforce, the ConfigMap missing":         {"Enforce", nil, "web", false, "no params found for policy binding with `Deny` parameterNotFoundAction"},
		"Audit, the ConfigMap missing, admitted": {"Audit", nil, "forbidden", true, ""},
		"Audit, a name it lists, admitted":       {"Audit", []*unstructured.Unstructured{cm}, "forbidden", true, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			body := strings.Replace(denyCM, "Enforce", tc.action, 1)
			src := contextRule("    - {name: cm, configMap: {name: c, namespace: n}}\n", body)
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
			require.Empty(t, diags)
			require.Empty(t, set.Skipped)
			p := set.Policies[0]
			require.Equal(t, &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, p.ParamKind)
			want := ir.ParamDeny
			if tc.action == "Audit" {
				want = ir.ParamAllow
			}
			assert.Equal(t, &ir.ParamRef{Name: "c", Namespace: "n", ParameterNotFoundAction: want}, p.Bindings[0].ParamRef)
			assert.Equal(t, "cm", p.From.ParamsContext)
			e, err := runtime.NewEngine(set)
			require.NoError(t, err)
			obj := pod(t, `{containers: [{name: a, image: "a:1"}]}`)
			obj.SetName(tc.name)
			req := runtime.RequestFor(obj, nil, "default")
			req.Params = tc.params
			res, err := e.Admit(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tc.allowed, res.Allowed())
			if tc.denial != "" {
				assert.Contains(t, strings.Join(res.Denials(), "\n"), tc.denial)
			}
		})
	}
}

// An entry the rule never reads is never loaded by Kyverno: no paramKind.
func TestConfigMapContextNeverRead(t *testing.T) {
	src := contextRule("    - {name: cm, configMap: {name: c}}\n", denyTeam)
	src = strings.Replace(src, "    - {name: cm", "    - {name: team, variable: {value: x}}\n    - {name: cm", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, 1)
	assert.Nil(t, set.Policies[0].ParamKind)
	assert.Nil(t, set.Policies[0].Bindings[0].ParamRef)
}

// denyRegistries is the published shape of a registry allow-list kept in a
// ConfigMap: every image must match one of its comma-separated patterns.
const denyRegistries = `    validate:
      failureAction: Enforce
      message: "Images must come from one of {{ cm.data.registries }}."
      deny:
        conditions:
          any:
          - key: "{{ request.object.spec.containers[].image }}"
            operator: AnyNotIn
            value: "{{ split(cm.data.registries, ',') }}"
`

// A rule that reads its ConfigMap through split() is written typed, as a
// person writes it: params.data.registries.split(",") iterated inside
// the containers' exists(), each pair matched as Kyverno's wildcard.Match
// both ways. Where the key is missing Kyverno's split() fails, and so does
// the typed validation, with Kyverno's error; a ConfigMap whose data are
// not strings (offline only: the API server keeps them strings) is judged
// by the exact form.
func TestConfigMapRulesAreTyped(t *testing.T) {
	set := compileConfigMapRule(t, denyRegistries)
	require.Empty(t, set.Skipped)
	p := set.Policies[0]
	require.NotNil(t, p.Dynamic, "the rule is typed, its exact form kept as its Dynamic form")
	require.Len(t, p.Validations, 1)
	assert.Contains(t, p.Validations[0].Expression, `params.data.registries.split(",").exists(registry,`)
	assert.Equal(t, `"Images must come from one of " + (has(params.data) ? params.data.registries : "null") + "."`, p.Validations[0].MessageExpression)
	for _, v := range p.Variables {
		assert.NotContains(t, v.Name, "kyverno", "the typed form reads params itself")
	}
	configMap := func(data map[string]any) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMapOf(data)}
	}
	allowList := configMap(map[string]any{"registries": "ghcr.io/acme/*,registry.k8s.io/pause:3.9"})
	cases := map[string]struct {
		params  []*unstructured.Unstructured
		images  string
		allowed bool
		denial  string
	}{
		"images the patterns match":          {allowList, `[{name: a, image: "ghcr.io/acme/web:1"}, {name: b, image: "registry.k8s.io/pause:3.9"}]`, true, ""},
		"one image no pattern matches":       {allowList, `[{name: a, image: "ghcr.io/acme/web:1"}, {name: b, image: "docker.io/nginx"}]`, false, "Images must come from one of ghcr.io/acme/*,registry.k8s.io/pause:3.9."},
		"an image that is itself a pattern":  {allowList, `[{name: a, image: "registry.k8s.io/*"}]`, true, ""},
		"regular expression text is literal": {configMap(map[string]any{"registries": "a.b/(x)*"}), `[{name: a, image: "a.b/(x)y"}, {name: b, image: "axb/(x)y"}]`, false, "Images must come from one of a.b/(x)*."},
		"the key missing: Kyverno's error": {configMap(map[string]any{"other": "x"}), `[{name: a, image: "ghcr.io/acme/web:1"}]`, false,
			`failed to substitute variables in condition value: failed to resolve split(cm.data.registries, ',') at path : JMESPath query failed: Invalid type for: <nil>, expected: []jmespath.JpType{\"string\"}`},
		"no data at all: the same error":            {configMap(nil), `[{name: a, image: "ghcr.io/acme/web:1"}]`, false, "failed to resolve split(cm.data.registries, ',')"},
		"data that are not strings: the exact form": {configMap(map[string]any{"registries": int64(5)}), `[{name: a, image: "ghcr.io/acme/web:1"}]`, false, "invalid type for split()"},
	}
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := runtime.RequestFor(pod(t, `{containers: `+tc.images+`}`), nil, "default")
			req.Params = tc.params
			res, err := e.Admit(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tc.allowed, res.Allowed(), "%v", res.Denials())
			if tc.denial != "" {
				assert.Contains(t, strings.Join(res.Denials(), "\n"), tc.denial)
			}
		})
	}
}

// A condition that reads a ConfigMap's key strictly keeps the exact form
// and decides as Kyverno: for a ConfigMap without data Kyverno's loader
// writes data: null, whose key is null (the condition is false), while a
// missing key of data that is there is Kyverno's error. (A typed
// params.data.mode would fail on both: the typed translation refuses a
// strict read of a ConfigMap's data outside a message.)
func TestConfigMapDataReadStrictlyKeepsTheExactForm(t *testing.T) {
	body := `    validate:
      failureAction: Enforce
      deny:
        conditions:
          any:
          - {key: "{{ cm.data.mode }}", operator: Equals, value: locked}
`
	set := compileConfigMapRule(t, body)
	p := set.Policies[0]
	require.Nil(t, p.Dynamic, "the exact form is the policy")
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		data    map[string]any
		allowed bool
	}{
		"no data: null, the condition is false": {nil, true},
		"locked":                                {map[string]any{"mode": "locked"}, false},
		"another key: Kyverno's error":          {map[string]any{"other": "x"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			cm := configMapOf(tc.data)
			req := runtime.RequestFor(pod(t, `{containers: [{name: a, image: "a:1"}]}`), nil, "default")
			req.Params = []*unstructured.Unstructured{cm}
			res, err := e.Admit(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tc.allowed, res.Allowed(), "%v", res.Denials())
		})
	}
}

// A ConfigMap's string compared with a list of names (an In operator's
// value read at admission) is typed: the string is the one pattern each
// name must match; a container without the field holds no name; a
// ConfigMap without data gives null (the operator is false); a missing
// key is Kyverno's error; a JSON array of plain strings is parsed, as
// Kyverno parses it, JSON's null holds no names and other JSON scalars are
// an invalid type (false); JSON arrays of anything else, objects and
// ranges raise admitc's error, as the exact form does.
func TestConfigMapStringValueIsTyped(t *testing.T) {
	body := `    validate:
      failureAction: Enforce
      message: "imagePullPolicy must be {{ cm.data.policy }}"
      deny:
        conditions:
          any:
          - key: "{{ request.object.spec.containers[].imagePullPolicy }}"
            operator: AnyNotIn
            value: "{{ cm.data.policy }}"
`
	set := compileConfigMapRule(t, body)
	p := set.Policies[0]
	require.NotNil(t, p.Dynamic, "the rule is typed")
	assert.Contains(t, p.Validations[0].Expression, `containers.exists(container, has(container.imagePullPolicy) && !`)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		data       map[string]any
		containers string
		allowed    bool
		denial     string
	}{
		"the policy named":          {map[string]any{"policy": "Always"}, `[{name: a, image: "a:1", imagePullPolicy: Always}]`, true, ""},
		"another policy":            {map[string]any{"policy": "Always"}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "imagePullPolicy must be Always"},
		"a pattern":                 {map[string]any{"policy": "If*"}, `[{name: a, image: "a:1", imagePullPolicy: IfNotPresent}]`, true, ""},
		"no imagePullPolicy":        {map[string]any{"policy": "Always"}, `[{name: a, image: "a:1"}]`, true, ""},
		"no data: null, admitted":   {nil, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, true, ""},
		"the key missing: an error": {map[string]any{"other": "x"}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "no such key"},
		"a JSON list: parsed":       {map[string]any{"policy": `["Always", "Never"]`}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, true, ""},
		"a JSON list of patterns":   {map[string]any{"policy": ` [ "Al*" ]`}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "imagePullPolicy must be  [ \"Al*\" ]"},
		"JSON null: no names":       {map[string]any{"policy": `null`}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "imagePullPolicy must be null"},
		"a number: invalid":         {map[string]any{"policy": ` 5 `}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, true, ""},
		"not JSON: itself":          {map[string]any{"policy": `05`}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "imagePullPolicy must be 05"},
		"other JSON: not parsed":    {map[string]any{"policy": `["Never", 1]`}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "admitc does not parse a JSON or range value computed at admission"},
		"a range: not parsed":       {map[string]any{"policy": `1-5`}, `[{name: a, image: "a:1", imagePullPolicy: Never}]`, false, "admitc does not parse a JSON or range value computed at admission"},
	} {
		t.Run(name, func(t *testing.T) {
			assertPodDecision(t, e, tc.containers, tc.data, tc.allowed, tc.denial)
		})
	}
}

// compileConfigMapRule compiles a ClusterPolicy whose rule, body, reads
// the ConfigMap n/c as cm.
func compileConfigMapRule(t *testing.T, body string) *ir.PolicySet {
	t.Helper()
	src := contextRule("    - {name: cm, configMap: {name: c, namespace: n}}\n", body)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	return set
}

// assertPodDecision admits a Pod of the containers (YAML flow) with the
// ConfigMap n/c holding data as params: allowed or not, and a denial
// holding denial when it is set.
func assertPodDecision(t *testing.T, e *runtime.Engine, containers string, data map[string]any, allowed bool, denial string) {
	t.Helper()
	req := runtime.RequestFor(pod(t, `{containers: `+containers+`}`), nil, "default")
	req.Params = []*unstructured.Unstructured{configMapOf(data)}
	res, err := e.Admit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, allowed, res.Allowed(), "%v", res.Denials())
	if denial != "" {
		assert.Contains(t, strings.Join(res.Denials(), "\n"), denial)
	}
}

// configMapOf is the ConfigMap n/c with data (none when nil).
func configMapOf(data map[string]any) *unstructured.Unstructured {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n"},
	}}
	if data != nil {
		cm.Object["data"] = data
	}
	return cm
}

// Images compared with a ConfigMap's string (keys that may hold
// wildcards) are typed too: each image and each of the value's strings
// match as Kyverno's patterns both ways, a JSON array of plain strings
// parsed; an image that is the JSON text itself raises admitc's error.
func TestConfigMapJSONValueMatchesImages(t *testing.T) {
	body := `    validate:
      failureAction: Enforce
      message: "images must come from {{ cm.data.images }}"
      deny:
        conditions:
          any:
          - key: "{{ request.object.spec.containers[].image }}"
            operator: AnyNotIn
            value: "{{ cm.data.images }}"
`
	set := compileConfigMapRule(t, body)
	require.NotNil(t, set.Policies[0].Dynamic, "the rule is typed")
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		images, containers string
		allowed            bool
		denial             string
	}{
		"each image among the patterns": {`["ghcr.io/*", "docker.io/library/nginx:1.27"]`, `[{name: a, image: "ghcr.io/a:1"}, {name: b, image: "docker.io/library/nginx:1.27"}]`, true, ""},
		"one image outside":             {`["ghcr.io/*"]`, `[{name: a, image: "ghcr.io/a:1"}, {name: b, image: "quay.io/b:1"}]`, false, `images must come from ["ghcr.io/*"]`},
		"an image that is a pattern":    {` [ "ghcr.io/a:1" ]`, `[{name: a, image: "ghcr.io/*"}]`, true, ""},
		"the empty array":               {`[]`, `[{name: a, image: "ghcr.io/a:1"}]`, false, "images must come from []"},
		"an image that is the JSON":     {`["x"]`, `[{name: a, image: "[\"x\"]"}]`, false, "admitc does not parse a JSON or range value computed at admission"},
		"not JSON: one pattern":         {`ghcr.io/*`, `[{name: a, image: "ghcr.io/a:1"}]`, true, ""},
	} {
		t.Run(name, func(t *testing.T) {
			assertPodDecision(t, e, tc.containers, map[string]any{"images": tc.images}, tc.allowed, tc.denial)
		})
	}
}
