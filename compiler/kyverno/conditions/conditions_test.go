package conditions

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Each case is a condition block on an object, with what Kyverno's
// operator code decides (read from pkg/engine/variables/operator), or the
// error Kyverno reports as a rule error. Each is decided twice, on the
// object as kube-apiserver 1.36 and as 1.37 presents a built-in object
// (kubetyped: a map or list compared with a value of another kind raises
// there unless the comparison is type-safe).
func TestConditionsDecideAsKyvernosOperators(t *testing.T) {
	obj := `{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: apps, labels: {tier: frontend}}, spec: {replicas: 3, type: NodePort, storage: 11Gi, timeout: 90s, ports: [80, 8080], neg: ["-9"], version: 1.2.3, nil: null, quote: "it's",
	  labelSelector: {matchLabels: {app: web}},
	  containers: [{name: a, image: "nginx:latest", args: ["--debug"]}, {name: b, image: "ghcr.io/acme/b:1.0"}]}}`
	cases := map[string]struct {
		cond string
		want any // bool, or "error"
	}{
		"equals string":               {`{any: [{key: "{{request.object.spec.type}}", operator: Equals, value: NodePort}]}`, true},
		"equals wildcard value":       {`{any: [{key: "{{request.object.spec.type}}", operator: Equals, value: "Node*"}]}`, true},
		"equals number and text":      {`{any: [{key: "{{request.object.spec.replicas}}", operator: Equals, value: "3"}]}`, true},
		"equals quantity":             {`{any: [{key: "{{request.object.spec.storage}}", operator: Equals, value: "11264Mi"}]}`, true},
		"equals quantity vs text":     {`{any: [{key: "1", operator: Equals, value: "a*"}]}`, false},
		"equals duration and seconds": {`{any: [{key: "{{request.object.spec.timeout}}", operator: Equals, value: 90}]}`, true},
		"equals bool vs string":       {`{any: [{key: true, operator: Equals, value: "true"}]}`, false},
		"not equals mismatched types": {`{any: [{key: true, operator: NotEquals, value: "true"}]}`, true},
		"not equals map key":          {`{any: [{key: "{{request.object.metadata.labels}}", operator: NotEquals, value: {tier: frontend}}]}`, false},
		"missing key is an error":     {`{any: [{key: "{{request.object.spec.missing}}", operator: Equals, value: x}]}`, "error"},
		"default for a missing key":   {`{any: [{key: "{{request.object.spec.missing || 'x'}}", operator: Equals, value: x}]}`, true},
		"field of null is null":       {`{any: [{key: "{{request.object.spec.nil.deeper}}", operator: Equals, value: x}]}`, false},
		"greater than number":         {`{any: [{key: "{{request.object.spec.replicas}}", operator: GreaterThan, value: 2}]}`, true},
		"greater than quantity":       {`{any: [{key: "{{request.object.spec.storage}}", operator: GreaterThan, value: 10Gi}]}`, true},
		"less than duration":          {`{any: [{key: "{{request.object.spec.timeout}}", operator: LessThan, value: 2m}]}`, true},
		"semver":                      {`{any: [{key: "{{request.object.spec.version}}", operator: GreaterThanOrEquals, value: 1.2.0}]}`, true},
		"numeric on text is false":    {`{any: [{key: abc, operator: GreaterThan, value: 1}]}`, false},
		"anyin projection wildcard":   {`{any: [{key: "{{request.object.spec.containers[].image}}", operator: AnyIn, value: ["*:latest"]}]}`, true},
		"allin projection":            {`{any: [{key: "{{request.object.spec.containers[].name}}", operator: AllIn, value: [a, b, c]}]}`, true},
		"anynotin projection":         {`{any: [{key: "{{request.object.spec.containers[].image}}", operator: AnyNotIn, value: ["ghcr.io/acme/*"]}]}`, true},
		"allnotin projection":         {`{any: [{key: "{{request.object.spec.containers[].name}}", operator: AllNotIn, value: [c]}]}`, true},
		"anyin scalar key, key glob":  {`{any: [{key: "ng*", operator: AnyIn, value: [nginx]}]}`, true},
		"anyin literal JSON text":     {`{any: [{key: b, operator: AnyIn, value: '["a", "b"]'}]}`, true},
		"anyin number value invalid":  {`{any: [{key: a, operator: AnyNotIn, value: 1}]}`, false},
		"allin empty key list":        {`{any: [{key: "{{request.object.spec.containers[?name == 'z'].name}}", operator: AllIn, value: [x]}]}`, true},
		// A range value ("lo-hi") checks the key's text as a pattern
		// (pattern.Validate): durations, then quantities; AnyNotIn on a
		// list key checks "lo!-hi", which a negative lo turns into "!".
		"anyin range, number key":                  {`{any: [{key: "{{request.object.spec.replicas}}", operator: AnyIn, value: "1-5"}]}`, true},
		"anynotin range, number key":               {`{any: [{key: "{{request.object.spec.replicas}}", operator: AnyNotIn, value: "1-3"}]}`, false},
		"anynotin range, list key":                 {`{any: [{key: "{{request.object.spec.ports}}", operator: AnyNotIn, value: "8000-9000"}]}`, true},
		"allin range, list key":                    {`{any: [{key: "{{request.object.spec.ports}}", operator: AllIn, value: "80-8080"}]}`, true},
		"allnotin range, list key":                 {`{any: [{key: "{{request.object.spec.ports}}", operator: AllNotIn, value: "81-8079"}]}`, true},
		"anyin quantity range":                     {`{any: [{key: "{{request.object.spec.storage}}", operator: AnyIn, value: "10Gi-12Gi"}]}`, true},
		"anyin duration range":                     {`{any: [{key: "{{request.object.spec.timeout}}", operator: AnyIn, value: "1m-2m"}]}`, true},
		"anyin range on text is false":             {`{any: [{key: "{{request.object.spec.type}}", operator: AnyIn, value: "1-5"}]}`, false},
		"anynotin negative range, scalar key":      {`{any: [{key: "-9", operator: AnyNotIn, value: "-10--8"}]}`, false},
		"anynotin negative range, list key":        {`{any: [{key: "{{request.object.spec.neg}}", operator: AnyNotIn, value: "-10--8"}]}`, true},
		"anyin not-in-range value is text":         {`{any: [{key: "5", operator: AnyIn, value: "1!-10"}]}`, false},
		"anyin range, list key equal to the value": {`{any: [{key: ["1-5"], operator: AnyIn, value: "1-5"}]}`, true},
		// JSON text that is not a list of strings: a scalar key is first
		// compared with the text as a wildcard pattern, then the value's
		// type is invalid.
		"anyin JSON number text, equal key":          {`{any: [{key: "10", operator: AllIn, value: "10"}]}`, true},
		"anynotin JSON number text":                  {`{any: [{key: "11", operator: AnyNotIn, value: "10"}]}`, false},
		"anyin JSON list text, one-element list key": {`{any: [{key: ["[1]"], operator: AnyIn, value: "[1]"}]}`, true},
		"filter and length":                          {`{any: [{key: "{{length(request.object.spec.containers[?ends_with(image, ':latest')])}}", operator: Equals, value: 1}]}`, true},
		"contains and starts_with":                   {`{all: [{key: "{{contains(request.object.spec.containers[].name, 'a')}}", operator: Equals, value: true}, {key: "{{starts_with(request.object.metadata.name, 'we')}}", operator: Equals, value: true}]}`, true},
		"embedded variables as text":                 {`{any: [{key: "{{request.object.metadata.name}}-{{request.object.spec.replicas}}", operator: Equals, value: web-3}]}`, true},
		"service account from user":                  {`{any: [{key: "{{serviceAccountNamespace}}/{{serviceAccountName}}", operator: Equals, value: ns1/builder}]}`, true},
		"any and all both hold":                      {`{any: [{key: a, operator: Equals, value: b}], all: [{key: a, operator: Equals, value: a}]}`, false},
		"length of null is an error":                 {`{any: [{key: "{{length(request.object.spec.missing)}}", operator: Equals, value: 0}]}`, "error"},
		"operation":                                  {`{any: [{key: "{{request.operation}}", operator: AnyIn, value: [CREATE, UPDATE]}]}`, true},
		// A sub-expression whose left side is a missing key returns the
		// fork's Unknown key error without calling the function; a filter
		// or projection swallows it.
		"function after a missing key in a filter":     {`{any: [{key: "{{request.object.spec.containers[?args.contains(@, '--debug')].name}}", operator: Equals, value: [a]}]}`, true},
		"function after a missing key in a projection": {`{any: [{key: "{{request.object.spec.containers[].args.contains(@, '--debug')}}", operator: Equals, value: [true]}]}`, true},
		"function on a missing key as argument":        {`{any: [{key: "{{request.object.spec.containers[?contains(args, '--debug')].name}}", operator: Equals, value: [a]}]}`, "error"},
		// The fork binds ! tighter than .: !a.b is (!a).b, null.
		"not binds tighter than a field": {`{any: [{key: "{{length(request.object.spec.containers[?!args.x])}}", operator: Equals, value: 0}]}`, true},
		// Kyverno's functions (pkg/engine/jmespath) and the fork's keys,
		// values and join.
		"keys of a present map":             {`{any: [{key: "{{length(keys(request.object.metadata.labels))}}", operator: GreaterThan, value: 0}]}`, true},
		"keys of a missing map is an error": {`{any: [{key: "{{length(keys(request.object.spec.selector))}}", operator: GreaterThan, value: 0}]}`, "error"},
		"keys of a string is an error":      {`{any: [{key: "{{keys(request.object.spec.type)}}", operator: Equals, value: x}]}`, "error"},
		"values":                            {`{any: [{key: "{{values(request.object.metadata.labels)}}", operator: AnyIn, value: [frontend]}]}`, true},
		"to_upper":                          {`{any: [{key: "{{to_upper(request.object.spec.type)}}", operator: Equals, value: NODEPORT}]}`, true},
		"to_lower of a number is an error":  {`{any: [{key: "{{to_lower(request.object.spec.replicas)}}", operator: Equals, value: "3"}]}`, "error"},
		"to_upper of non-ASCII: admitc errs (Kyverno: true)": {`{any: [{key: "{{to_upper('straße')}}", operator: Equals, value: STRASSE}]}`, "error"},
		"regex_match is unanchored":                          {`{any: [{key: "{{regex_match('tag', request.object.spec.containers[0].image)}}", operator: Equals, value: false}, {key: "{{regex_match('lat', request.object.spec.containers[0].image)}}", operator: Equals, value: true}]}`, true},
		"regex_match on a number":                            {`{any: [{key: "{{regex_match('^3$', request.object.spec.replicas)}}", operator: Equals, value: true}]}`, true},
		"regex_match on null is an error":                    {`{any: [{key: "{{regex_match('a', request.object.spec.nil)}}", operator: Equals, value: false}]}`, "error"},
		"regex_match invalid pattern":                        {`{any: [{key: "{{regex_match('(', 'a')}}", operator: Equals, value: false}]}`, "error"},
		"join":                                               {`{any: [{key: "{{join('/', request.object.spec.containers[].name)}}", operator: Equals, value: a/b}]}`, true},
		"join of non-strings is an error":                    {`{any: [{key: "{{join('/', request.object.spec.containers)}}", operator: Equals, value: x}]}`, "error"},
		"split":                                              {`{any: [{key: "{{split(request.object.spec.version, '.')}}", operator: Equals, value: ["1", "2", "3"]}]}`, true},
		"images registry":                                    {`{any: [{key: "{{images.containers.*.registry}}", operator: AllIn, value: [docker.io, ghcr.io]}]}`, true},
		"images tag through a nested variable":               {`{any: [{key: "{{images.containers.\"{{request.object.spec.containers[0].name}}\".tag}}", operator: Equals, value: latest}]}`, true},
		"images bare nested field name":                      {`{any: [{key: "{{images.containers.{{request.object.spec.containers[1].name}}.path}}", operator: Equals, value: acme/b}]}`, true},
		"images list without images is unknown":              {`{any: [{key: "{{images.initContainers}}", operator: Equals, value: x}]}`, "error"},
		"nested variables in raw strings":                    {`{any: [{key: "{{ starts_with('{{request.object.metadata.name}}-{{request.object.spec.replicas}}', 'web-3') }}", operator: Equals, value: true}]}`, true},
		"a nested text holding a quote is an error":          {`{any: [{key: "{{ starts_with('{{request.object.spec.quote}}', 'it') }}", operator: Equals, value: true}]}`, "error"},
		// A map or list where a scalar is compared: Kyverno's handlers
		// answer false (NotEquals true), its JMESPath compares deeply.
		"equals map key and bool":               {`{any: [{key: "{{request.object.spec.labelSelector}}", operator: Equals, value: false}]}`, false},
		"not equals map key and bool":           {`{any: [{key: "{{request.object.spec.labelSelector}}", operator: NotEquals, value: false}]}`, true},
		"equals list key and string":            {`{any: [{key: "{{request.object.spec.containers}}", operator: Equals, value: x}]}`, false},
		"equals map, nested map vs string":      {`{any: [{key: "{{request.object.spec.labelSelector}}", operator: Equals, value: {matchLabels: web}}]}`, false},
		"not equals map, nested map vs string":  {`{any: [{key: "{{request.object.spec.labelSelector}}", operator: NotEquals, value: {matchLabels: web}}]}`, true},
		"equals literal map key, nested":        {`{any: [{key: {matchLabels: web}, operator: Equals, value: "{{request.object.spec.labelSelector}}"}]}`, false},
		"equals list of maps and strings":       {`{any: [{key: "{{request.object.spec.containers}}", operator: Equals, value: [a, b]}]}`, false},
		"jmespath map == string":                {`{any: [{key: "{{request.object.spec.labelSelector == 'x'}}", operator: Equals, value: false}]}`, true},
		"jmespath map != string":                {`{any: [{key: "{{request.object.spec.labelSelector != 'x'}}", operator: Equals, value: true}]}`, true},
		"jmespath projection of lists == list":  {`{any: [{key: "{{request.object.spec.containers[].args == ` + "`[1]`" + `}}", operator: Equals, value: false}]}`, true},
		"jmespath number == number":             {`{any: [{key: "{{request.object.spec.replicas == ` + "`3.0`" + `}}", operator: Equals, value: true}]}`, true},
		"jmespath truthiness of a map":          {`{any: [{key: "{{request.object.spec.labelSelector || 'none'}}", operator: Equals, value: none}]}`, false},
		"jmespath not of a list":                {`{any: [{key: "{{!(request.object.spec.containers)}}", operator: Equals, value: false}]}`, true},
		"jmespath filter on a map field == str": {`{any: [{key: "{{length(request.object.spec.containers[?args == 'x'])}}", operator: Equals, value: 0}]}`, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			expr := strings.ReplaceAll(conditionsOf(t, c.cond), ImagesReference, "("+ImagesExpression()+")")
			for version, eval := range map[string]func(*testing.T, string, string, string) (any, error){"1.36": evalCEL, "1.37": evalTyped} {
				out, err := eval(t, expr, obj, "CREATE")
				if c.want == "error" {
					assert.Error(t, err, version)
					continue
				}
				require.NoError(t, err, version)
				assert.Equal(t, c.want, out, version)
			}
		})
	}
}

// request.object is the old object on DELETE, as Kyverno rewrites it.
func TestRequestObjectOnDelete(t *testing.T) {
	out, err := evalCEL(t, conditionsOf(t, `{any: [{key: "{{request.object.metadata.name}}", operator: Equals, value: web}]}`), `{metadata: {name: web}}`, "DELETE")
	require.NoError(t, err)
	assert.Equal(t, true, out)
}

func TestMessageSubstitutesVariables(t *testing.T) {
	fresh := 0
	m, err := Message("{{ request.object.metadata.name }} has {{ request.object.spec.replicas }} replicas", Scope{}, &fresh)
	require.NoError(t, err)
	out, err := evalCEL(t, m, `{metadata: {name: web}, spec: {replicas: 7}}`, "CREATE")
	require.NoError(t, err)
	assert.Equal(t, "web has 7 replicas", out)
	m, err = Message("static", Scope{}, &fresh)
	require.NoError(t, err)
	assert.Equal(t, "'static'", m)
}

func TestRefusalsNameTheConstruct(t *testing.T) {
	cases := map[string]string{
		`{any: [{key: "{{ imageData.registry }}", operator: Equals, value: x}]}`:                              `any[0].key: JMESPath "imageData.registry": imageData is neither declared in the rule's context before it is read nor a variable Kyverno provides that admitc translates (request, serviceAccountName, serviceAccountNamespace, images; element, elementIndex, elementN and elementIndexN inside a foreach): declare imageData in the rule's context, before the entries that read it, or correct the name`,
		"{any: [{key: \"{{ contains(`[\\\"{{ request.name }}\\\"]`, 'x') }}\", operator: Equals, value: x}]}": `a {{ }} variable inside another is translated only where it names a field (a."{{ x }}") or stands in a raw string ('{{ x }}'); write the query without it, or keep the rule under Kyverno`,
		`{all: [{key: "{{ request.object.spec | base64_decode(@) }}", operator: Equals, value: x}]}`:          `all[0].key: JMESPath "request.object.spec | base64_decode(@)": function base64_decode() is not in the subset admitc translates (abs, add, avg, ceil, contains, divide, ends_with, equal_fold, floor, items, join, keys, label_match, length, lookup, map, max, max_by, merge, min, min_by, modulo, multiply, not_null, pattern_match, regex_match, replace, replace_all, reverse, sort, split, starts_with, subtract, sum, to_array, to_boolean, to_lower, to_number, to_string, to_upper, trim, trim_prefix, truncate, type, values)`,
		`{any: [{key: "{{ request.object.spec.containers[0:2] | &name }}", operator: Equals, value: x}]}`:     `any[0].key: JMESPath "request.object.spec.containers[0:2] | &name": an expression reference (&) is not in the subset`,
		`{any: [{key: a, operator: DurationGreaterThan, value: 1h}]}`:                                         `any[0].operator: operator DurationGreaterThan is not translated`,
	}
	for cond, want := range cases {
		var raw any
		require.NoError(t, yaml.Unmarshal([]byte(cond), &raw))
		c, err := Decode(raw)
		require.NoError(t, err)
		fresh := 0
		_, err = Conditions(c, Scope{}, &fresh)
		require.Error(t, err, cond)
		assert.Contains(t, err.Error(), want)
	}
}

func TestMessageWritesListsAsJSON(t *testing.T) {
	fresh := 0
	m, err := Message(`hosts {{ request.object.spec.hosts }} and {{ request.object.spec.num }}`, Scope{}, &fresh)
	require.NoError(t, err)
	out, err := evalCEL(t, m, `{spec: {hosts: [a.io, "q\"<b>"], num: 2.5}}`, "CREATE")
	require.NoError(t, err)
	assert.Equal(t, `hosts ["a.io","q\"\u003cb\u003e"] and 2.5`, out)
}

// A list key is compared with the substituted value, never with the value's
// text as written: a key equal to that text is not the value.
func TestInOperatorComparesTheSubstitutedValue(t *testing.T) {
	e := conditionsOf(t, `{any: [{key: "{{ request.object.spec.names }}", operator: AnyNotIn, value: "{{ request.object.spec.allowed }}"}]}`)
	out, err := evalCEL(t, e, `{spec: {names: ["{{ request.object.spec.allowed }}"], allowed: [a]}}`, "CREATE")
	require.NoError(t, err)
	assert.Equal(t, true, out)
	out, err = evalCEL(t, e, `{spec: {names: [a], allowed: [a]}}`, "CREATE")
	require.NoError(t, err)
	assert.Equal(t, false, out)
}

// Kyverno evaluates a block's conditions in order and stops at the first
// error: a later condition that would decide the block does not hide it
// (CEL's || and && would).
func TestConditionErrorsAreNotAbsorbed(t *testing.T) {
	const pod = `{metadata: {name: bad}}`
	for block, want := range map[string]string{
		`{any: [{key: "{{ request.object.metadata.labels.x }}", operator: Equals, value: a}, {key: "{{ request.object.metadata.name }}", operator: Equals, value: bad}]}`:    "error",
		`{any: [{key: "{{ request.object.metadata.name }}", operator: Equals, value: bad}, {key: "{{ request.object.metadata.labels.x }}", operator: Equals, value: a}]}`:    "true",
		`{all: [{key: "{{ request.object.metadata.labels.x }}", operator: Equals, value: a}, {key: "{{ request.object.metadata.name }}", operator: Equals, value: nobody}]}`: "error",
		`{all: [{key: "{{ request.object.metadata.name }}", operator: Equals, value: nobody}, {key: "{{ request.object.metadata.labels.x }}", operator: Equals, value: a}]}`: "false",
		`{any: [{key: a, operator: Equals, value: b}], all: [{key: "{{ request.object.metadata.labels.x }}", operator: Equals, value: a}]}`:                                  "error",
		`{any: [{key: a, operator: Equals, value: a}], all: [{key: a, operator: Equals, value: a}]}`:                                                                         "true",
	} {
		out, err := evalCEL(t, conditionsOf(t, block), pod, "CREATE")
		got := fmt.Sprint(out)
		if err != nil {
			got = "error"
		}
		assert.Equal(t, want, got, block)
	}
}

// A value list may mix types and hold lists, as Kyverno's JSON does; a
// list element is written as Go's fmt does ("[b c]").
func TestMixedValueLists(t *testing.T) {
	e := conditionsOf(t, `{any: [{key: "{{ request.object.metadata.name }}", operator: AnyNotIn, value: [a, 1, [b, c], null]}]}`)
	for name, want := range map[string]bool{"b": true, "a": false, "[b c]": false, "1": false} {
		out, err := evalCEL(t, e, `{metadata: {name: "`+name+`"}}`, "CREATE")
		require.NoError(t, err)
		assert.Equal(t, want, out, name)
	}
}
