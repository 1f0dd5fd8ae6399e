package pattern

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func patternOf(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal([]byte(s), &v))
	return v
}

// TestTranslate checks translated patterns against outcomes written by
// hand from Kyverno's source (validate, anchor and pattern packages).
func TestTranslate(t *testing.T) {
	const privileged = `{spec: {containers: [{=(securityContext): {=(privileged): "false"}}]}}`
	cases := map[string]struct{ pattern, object, want string }{
		"equality anchor absent":         {privileged, `{spec: {containers: [{name: a, image: x}]}}`, "pass"},
		"equality anchor violated":       {privileged, `{spec: {containers: [{name: a, image: x, securityContext: {privileged: true}}]}}`, "fail /spec/containers/0/securityContext/privileged/"},
		"string pattern matches bool":    {privileged, `{spec: {containers: [{securityContext: {privileged: false}}]}}`, "pass"},
		"map pattern on missing key":     {privileged, `{}`, "fail /spec/"},
		"empty list passes":              {privileged, `{spec: {containers: []}}`, "pass"},
		"star needs a non-null value":    {`{metadata: {name: "*"}}`, `{metadata: {name: null}}`, "fail /metadata/"},
		"star accepts a map":             {`{metadata: {name: "*"}}`, `{metadata: {name: {a: 1}}}`, "pass"},
		"nonempty wildcard":              {`{metadata: {name: "?*"}}`, `{metadata: {name: ""}}`, "fail /metadata/name/"},
		"negated wildcard":               {`{spec: {image: "!*:latest"}}`, `{spec: {image: "a:latest"}}`, "fail /spec/image/"},
		"alternatives":                   {`{spec: {type: "A | B"}}`, `{spec: {type: B}}`, "pass"},
		"conditional not met skips":      {`{spec: {(hostNetwork): true, hostPID: true}}`, `{spec: {hostNetwork: false, hostPID: false}}`, "skip"},
		"conditional met checks":         {`{spec: {(hostNetwork): true, hostPID: true}}`, `{spec: {hostNetwork: true, hostPID: false}}`, "fail /spec/hostPID/"},
		"conditional silences negation":  {`{spec: {(a): 1, X(b): null}}`, `{spec: {a: 2, b: 1}}`, "skip"},
		"negation":                       {`{spec: {X(hostPath): null}}`, `{spec: {hostPath: {}}}`, "fail /spec/hostPath/"},
		"list elements that skip":        {`{spec: {containers: [{(name): web, image: "web:*"}]}}`, `{spec: {containers: [{name: db, image: x}, {name: web, image: "web:1"}]}}`, "pass"},
		"all elements skip":              {`{spec: {containers: [{(name): web, image: "web:*"}]}}`, `{spec: {containers: [{name: db, image: x}]}}`, "skip"},
		"global anchor skips rule":       {`{spec: {containers: [{<(image): "corp/*"}], imagePullSecrets: [{name: "?*"}]}}`, `{spec: {containers: [{image: nginx}]}}`, "skip"},
		"global anchor met":              {`{spec: {containers: [{<(image): "corp/*"}], imagePullSecrets: [{name: "?*"}]}}`, `{spec: {containers: [{image: corp/x}]}}`, "fail /spec/imagePullSecrets/"},
		"existence anchor":               {`{spec: {^(containers): [{name: web}]}}`, `{spec: {containers: [{name: db}]}}`, "fail /spec/containers/"},
		"existence anchor met":           {`{spec: {^(containers): [{name: web}]}}`, `{spec: {containers: [{name: db}, {name: web}]}}`, "pass"},
		"anchor key never found":         {`{spec: {containers: [{(image): "*:latest", imagePullPolicy: Always}]}}`, `{spec: {containers: [{}, 1]}}`, "error /spec/containers/1/"},
		"scalar pattern over list":       {`{add: "A | B"}`, `{add: [A, B, C]}`, "fail /add/"},
		"greater than quantity":          {`{m: ">1Gi"}`, `{m: 1025Mi}`, "pass"},
		"missing value is zero quantity": {`{=(m): "<1"}`, `{m: null}`, "pass"},
		"range":                          {`{r: "1-5"}`, `{r: 6}`, "fail /r/"},
		"not in range":                   {`{r: "1!-5"}`, `{r: 6}`, "pass"},
		"negative range":                 {`{r: "-10--1"}`, `{r: -3}`, "pass"},
		"duration":                       {`{d: ">=30s & <5m"}`, `{d: 90s}`, "pass"},
		"duration out of range":          {`{d: ">=30s & <5m"}`, `{d: 5m}`, "fail /d/"},
		"m is minutes before millis":     {`{d: "<2m"}`, `{d: 500m}`, "fail /d/"},
		"null pattern":                   {`{v: null}`, `{v: 0}`, "pass"},
		"null pattern on a map":          {`{v: null}`, `{v: {}}`, "fail /v/"},
		"number pattern and string":      {`{v: 30}`, `{v: "030"}`, "pass"},
		"float pattern":                  {`{v: 1.5}`, `{v: "1.50"}`, "pass"},
		"bool pattern":                   {`{v: true}`, `{v: "true"}`, "fail /v/"},
		"label wildcard key":             {`{metadata: {labels: {"app.kubernetes.io/*": "?*"}}}`, `{metadata: {labels: {app.kubernetes.io/name: web}}}`, "pass"},
		"label wildcard key unmatched":   {`{metadata: {labels: {"app.kubernetes.io/*": "?*"}}}`, `{metadata: {labels: {team: a}}}`, "fail /metadata/labels/app.kubernetes.io/*/"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := Translate(patternOf(t, tc.pattern), "object")
			require.NoError(t, err)
			got, err := evalString(t, e.Result, decode(t, tc.object))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTranslateAny(t *testing.T) {
	ps := patternOf(t, `[{spec: {(hostNetwork): true, hostPID: true}}, {spec: {runAsNonRoot: true}}]`).([]any)
	e, err := TranslateAny(ps, "object")
	require.NoError(t, err)
	eval := compileString(t, e.Result)
	for obj, want := range map[string]string{
		`{spec: {runAsNonRoot: true}}`:                  "pass",
		`{spec: {hostNetwork: true, hostPID: true}}`:    "pass",
		`{spec: {hostNetwork: true, runAsNonRoot: no}}`: "fail [0]/spec/hostPID/\n[1]/spec/runAsNonRoot/",
		`{spec: {hostNetwork: false}}`:                  "fail [1]/spec/runAsNonRoot/",
	} {
		got, err := eval(decode(t, obj))
		require.NoError(t, err)
		assert.Equal(t, want, got, obj)
	}
	skips, err := TranslateAny(patternOf(t, `[{(a): 1}, {(b): 1}]`).([]any), "object")
	require.NoError(t, err)
	got, err := evalString(t, skips.Result, decode(t, `{a: 2}`))
	require.NoError(t, err)
	assert.Equal(t, "skip", got)
}

// TestMessage checks Kyverno's violation messages (buildErrorMessage and
// buildAnyPatternErrorMessage).
func TestMessage(t *testing.T) {
	e, err := Translate(patternOf(t, `{spec: {hostPID: false}}`), "object")
	require.NoError(t, err)
	expr := fmt.Sprintf("[%s].map(r, %s + '|' + %s)[0]", e.Result, e.Outcome("r"), e.Message("r", "host-pid", "hostPID is not allowed"))
	got, err := evalString(t, expr, decode(t, `{spec: {hostPID: true}}`))
	require.NoError(t, err)
	assert.Equal(t, "fail|validation error: hostPID is not allowed. rule host-pid failed at path /spec/hostPID/", got)

	a, err := TranslateAny(patternOf(t, `[{a: 1}, {b: 2}]`).([]any), "object")
	require.NoError(t, err)
	got, err = evalString(t, fmt.Sprintf("[%s].map(r, %s)[0]", a.Result, a.Message("r", "ab", "")), decode(t, `{}`))
	require.NoError(t, err)
	assert.Equal(t, "validation error: rule ab[0] failed at path /a/ rule ab[1] failed at path /b/", got)
}

// TestRefused checks the constructs the translation refuses, with their
// rendered errors.
func TestRefused(t *testing.T) {
	cases := map[string]struct{ pattern, want string }{
		"variable":              {`{metadata: {name: "{{ request.object.metadata.namespace }}"}}`, `pattern.metadata.name: variables {{ }} in pattern values are not translated`},
		"reference":             {`{spec: {a: "$(b)"}}`, `pattern.spec.a: the reference $(b) names no value of the pattern (/spec/a/b): Kyverno fails the rule on every resource`},
		"reference to a map":    {`{spec: {a: "$(./../b)", b: {c: "1", d: "2"}}}`, `pattern.spec.a: the reference $(./../b) names a map of the pattern (/spec/b), whose keys Kyverno visits in random order: Kyverno fails the rule on every resource`},
		"reference to a number": {`{spec: {a: "$(./../b)", b: 1}}`, `pattern.spec.a: the reference $(./../b) names a float64, which Kyverno does not substitute: it fails the rule on every resource`},
		"reference in a key":    {`{spec: {"$(./a)": "1"}}`, `pattern.spec.$(./a): references $( ) in pattern keys are not translated`},
		"add anchor":            {`{spec: {+(a): 1}}`, `pattern.spec.+(a): the add anchor +() is not allowed in validate patterns`},
		"list of lists":         {`{a: [[1]]}`, `pattern.a[0]: a list of lists is not translated (Kyverno compares it position by position and reports a length mismatch as an engine error)`},
		"float text":            {`{a: "1*"}`, `pattern.a: pattern "1*" could match a floating-point value written in Go's %E notation, which CEL cannot produce`},
		"label value type":      {`{metadata: {labels: {app: 1}}}`, `pattern.metadata.labels.app: a float64 value in a labels or annotations pattern: Kyverno drops non-string values there when the resource has the map`},
		"label wildcard in list": {`{items: [{metadata: {labels: {"app*": x}}}]}`,
			`pattern.items[0].metadata.labels.app*: a wildcard key in a labels or annotations pattern inside a list: Kyverno rewrites the pattern for the first element and keeps the rewrite for the next`},
		"existence of scalar": {`{^(a): x}`, `pattern.^(a): an existence anchor needs a list of maps, not string`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Translate(patternOf(t, tc.pattern), "object")
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// TestCost checks the runtime cost of a Pod Security rule on a Pod with 100
// containers stays far below the API server's per-expression limit.
func TestCost(t *testing.T) {
	e, err := Translate(patternOf(t, `
spec:
  =(initContainers):
  - =(securityContext):
      =(privileged): "false"
  containers:
  - (image): "*:latest"
    imagePullPolicy: Always
    =(securityContext):
      =(privileged): "false"
      =(capabilities):
        =(add): "AUDIT_WRITE | CHOWN"
`), "object")
	require.NoError(t, err)
	var containers []string
	for i := 0; i < 100; i++ {
		containers = append(containers, fmt.Sprintf(`{name: c%d, image: "nginx:latest", imagePullPolicy: Always, securityContext: {privileged: false, capabilities: {add: [CHOWN]}}}`, i))
	}
	obj := decode(t, `{spec: {containers: [`+strings.Join(containers, ", ")+`]}}`)
	cost := evalCost(t, e.Result, obj)
	t.Logf("cost %d for 100 containers", cost)
	assert.Less(t, cost, uint64(100000))
}
