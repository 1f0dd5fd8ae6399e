package compiler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/ir"
)

const kyvernoPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: pss
spec:
  validationFailureAction: Enforce
  rules:
  - name: privileged
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: no privileged containers
      cel:
        expressions:
        - expression: object.spec.containers.all(c, !has(c.securityContext) || c.securityContext.?privileged.orValue(false) == false)
  - name: from-api
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: ns
      apiCall:
        urlPath: /api/v1/namespaces
    validate:
      deny:
        conditions:
          any: [{key: "{{ ns }}", operator: Equals, value: ""}]
  - name: pattern
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        spec:
          nodeSelector:
            "{{ request.object.metadata.name }}": "?*"
`

func names(set *ir.PolicySet) []string {
	var out []string
	for _, p := range set.Policies {
		out = append(out, p.Name)
	}
	return out
}

func TestKyvernoRefusalsAreErrorsUnlessKeepGoing(t *testing.T) {
	src := Source{Name: "pss.yaml", Data: []byte(kyvernoPolicy)}
	_, diags := Compile([]Source{src}, Options{})
	require.Len(t, diags, 2)
	assert.Equal(t, `pss.yaml:24:7: spec.rules[1].context[0]: context.apiCall: Kyverno loads this context entry from the API server (or a service) at admission; an admission policy cannot: keep this rule under Kyverno (admitc verify reads the entry from a Kyverno test's values, as kyverno test does offline) (ClusterPolicy "pss" rule "from-api"); admitc compile --keep-going emits the rest`, diags[0].String())
	assert.Equal(t, `pss.yaml:40:13: spec.rules[2].validate.pattern.spec.nodeSelector: validate.pattern construct: variables in pattern keys are not translated; rewrite the pattern without it (or the check as validate.cel), or keep this rule under Kyverno (ClusterPolicy "pss" rule "pattern"); admitc compile --keep-going emits the rest`, diags[1].String())

	set, diags := Compile([]Source{src}, Options{KeepGoing: true})
	require.Empty(t, diags)
	assert.Equal(t, []string{"pss.privileged", "pss.autogen-privileged", "pss.autogen-cronjob-privileged"}, names(set))
	var skipped []string
	for _, s := range set.Skipped {
		skipped = append(skipped, s.From.Rule+": "+s.Feature)
	}
	assert.Equal(t, []string{"from-api: context.apiCall", "pattern: validate.pattern construct", "autogen-from-api: context.apiCall", "autogen-cronjob-from-api: context.apiCall",
		"autogen-pattern: validate.pattern construct", "autogen-cronjob-pattern: validate.pattern construct"}, skipped)
	cron := set.Policies[2]
	assert.Equal(t, "object.spec.jobTemplate.spec.template.spec.containers.all(c, !has(c.securityContext) || c.securityContext.?privileged.orValue(false) == false)", cron.Validations[0].Expression)
	assert.Equal(t, []ir.Action{ir.Deny}, cron.Bindings[0].Actions)
	assert.Equal(t, &ir.PolicyRef{APIVersion: "kyverno.io/v1", Kind: "ClusterPolicy", Name: "pss", Rule: "autogen-cronjob-privileged", AutogenOf: "privileged"}, cron.From)
	assert.Equal(t, []string{"cronjobs"}, cron.MatchConstraints.ResourceRules[0].Resources)
}

func TestKyvernoAutogen(t *testing.T) {
	tests := map[string]struct {
		annotation, match string
		want              []string
	}{
		"default controllers":        {match: "kinds: [Pod]", want: []string{"p.r", "p.autogen-r", "p.autogen-cronjob-r"}},
		"annotation none":            {annotation: "none", match: "kinds: [Pod]", want: []string{"p.r"}},
		"annotation Deployment":      {annotation: "Deployment", match: "kinds: [Pod]", want: []string{"p.r", "p.autogen-r"}},
		"annotation CronJob only":    {annotation: "CronJob", match: "kinds: [Pod]", want: []string{"p.r", "p.autogen-cronjob-r"}},
		"names turn autogen off":     {match: "kinds: [Pod]\n          names: [web-*]", want: []string{"p.r"}},
		"selector turns autogen off": {match: "kinds: [Pod]\n          selector: {matchLabels: {a: b}}", want: []string{"p.r"}},
		"Pod among other kinds":      {match: "kinds: [Pod, Service]", want: []string{"p.r"}},
		"no Pod":                     {match: "kinds: [Deployment]", want: []string{"p.r"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ann := ""
			if tc.annotation != "" {
				ann = "\n  annotations:\n    pod-policies.kyverno.io/autogen-controllers: " + tc.annotation
			}
			src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p` + ann + `
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          ` + tc.match + `
    validate:
      cel:
        expressions:
        - expression: object.metadata.name != "x"
`
			set, diags := Compile([]Source{{Name: "p.yaml", Data: []byte(src)}}, Options{})
			require.Empty(t, diags)
			assert.Equal(t, tc.want, names(set))
			assert.Equal(t, []ir.Action{ir.Audit}, set.Policies[0].Bindings[0].Actions, "Audit is the default; it warns only with emitWarning")
		})
	}
}

func TestKyvernoCELErrorsAtTheirPlace(t *testing.T) {
	src := `apiVersion: policies.kyverno.io/v1alpha1
kind: ValidatingPolicy
metadata:
  name: vp
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: sizee(object.spec.containers) > 0
`
	_, diags := Compile([]Source{{Name: "vp.yaml", Data: []byte(src)}}, Options{})
	require.Len(t, diags, 1, "the autogen twins are not reported again")
	assert.Equal(t, "vp.yaml:13:22: spec.validations[0].expression: undeclared reference to 'sizee'\n |   - expression: sizee(object.spec.containers) > 0\n | .....................^", diags[0].String())
}

func TestKyvernoValidatingPolicyAutogenAndLibraries(t *testing.T) {
	src := `apiVersion: policies.kyverno.io/v1beta1
kind: ValidatingPolicy
metadata:
  name: vp
spec:
  validationActions: [Audit]
  autogen:
    podControllers:
      controllers: [deployments]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  matchConditions:
  - name: not-system
    expression: object.metadata.namespace != "kube-system"
  validations:
  - expression: object.metadata.name.startsWith("a") && size(object.spec.containers) > 0
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: remote
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: http.Get("https://policy.example.com/allowed/" + object.metadata.name).allowed == true
`
	set, diags := Compile([]Source{{Name: "vp.yaml", Data: []byte(src)}}, Options{KeepGoing: true})
	require.Empty(t, diags)
	assert.Equal(t, []string{"vp", "autogen-vp"}, names(set))
	g := set.Policies[1]
	assert.Equal(t, `object.metadata.namespace != "kube-system"`, g.MatchConditions[0].Expression, "metadata.namespace is kept")
	assert.Equal(t, `object.spec.template.metadata.name.startsWith("a") && size(object.spec.template.spec.containers) > 0`, g.Validations[0].Expression)
	assert.Equal(t, []string{"deployments"}, g.MatchConstraints.ResourceRules[0].Resources)
	assert.Equal(t, []ir.Action{ir.Audit}, g.Bindings[0].Actions)
	require.Len(t, set.Skipped, 1)
	assert.Equal(t, "CEL library http", set.Skipped[0].Feature)
}

func TestKyvernoMatchCondition(t *testing.T) {
	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  background: false
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaceSelector:
            matchLabels: {env: prod}
    exclude:
      any:
      - subjects:
        - kind: Group
          name: admins
    validate:
      cel:
        expressions:
        - expression: "true"
`
	set, diags := Compile([]Source{{Name: "p.yaml", Data: []byte(src)}}, Options{})
	require.Empty(t, diags)
	p := set.Policies[0]
	assert.Equal(t, &ir.LabelSelector{MatchExpressions: []ir.LabelSelectorRequirement{{Key: "env", Operator: "In", Values: []string{"prod"}}}}, p.MatchConstraints.NamespaceSelector)
	require.Len(t, p.MatchConditions, 1)
	assert.Equal(t, "kyverno-match", p.MatchConditions[0].Name)
	assert.Contains(t, p.MatchConditions[0].Expression, `request.kind.kind != "Namespace"`)
	assert.Contains(t, p.MatchConditions[0].Expression, `&& !(((request.userInfo.?groups.orValue([]).exists(g, g == "admins"))))`)
}

// A translated rule whose CEL does not type-check (here: the images
// variable and the pattern's list walks need CEL libraries Kubernetes 1.31
// lacks) is a refusal of that rule, not an error that costs the file's
// other rules.
func TestTranslationThatDoesNotCompileIsARefusal(t *testing.T) {
	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mixed
spec:
  rules:
  - name: images
    match: {any: [{resources: {kinds: [Service]}}]}
    validate:
      failureAction: Enforce
      deny:
        conditions:
          any:
          - key: "{{ images.containers.*.tag }}"
            operator: AnyIn
            value: [latest]
  - name: namespace
    match: {any: [{resources: {kinds: [Service]}}]}
    validate:
      failureAction: Enforce
      deny:
        conditions:
          any:
          - key: "{{ request.namespace }}"
            operator: Equals
            value: default
`
	old := version.MajorMinor(1, 31)
	_, diags := Compile([]Source{{Name: "p.yaml", Data: []byte(src)}}, Options{KubeVersion: old})
	require.Len(t, diags, 1)
	assert.Contains(t, diags[0].String(), `p.yaml:7:5: spec.rules[0]: translation: admitc's CEL for this rule does not compile for this Kubernetes version`)
	assert.Contains(t, diags[0].String(), `(ClusterPolicy "mixed" rule "images")`)
	assert.Contains(t, diags[0].String(), "admitc compile --keep-going emits the rest")

	set, diags := Compile([]Source{{Name: "p.yaml", Data: []byte(src)}}, Options{KubeVersion: old, KeepGoing: true})
	require.Empty(t, diags)
	assert.Equal(t, []string{"mixed.namespace"}, names(set))
	require.Len(t, set.Skipped, 1)
	assert.Equal(t, "images", set.Skipped[0].From.Rule)

	set, diags = Compile([]Source{{Name: "p.yaml", Data: []byte(src)}}, Options{})
	require.Empty(t, diags)
	assert.Equal(t, []string{"mixed.images", "mixed.namespace"}, names(set))
}

// The policies Kyverno's autogen makes from a rule whose translation does
// not compile are refused with it: none is written unchecked.
func TestAutogenOfAnUncheckedTranslationIsRefusedWithIt(t *testing.T) {
	const src = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mixed
spec:
  rules:
  - name: images
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Enforce
      deny:
        conditions:
          any:
          - key: "{{ images.containers.*.path }}"
            operator: AnyIn
            value: [library/nginx]
`
	// (The path of an image is read by the exact images variable only,
	// which Kubernetes 1.31's CEL does not compile.)
	set, diags := Compile([]Source{{Name: "p.yaml", Data: []byte(src)}}, Options{KubeVersion: version.MajorMinor(1, 31), KeepGoing: true})
	require.Empty(t, diags)
	assert.Empty(t, names(set))
	var rules []string
	for _, sk := range set.Skipped {
		rules = append(rules, sk.From.Rule)
		assert.Contains(t, sk.Reason, "does not compile for this Kubernetes version")
	}
	assert.Equal(t, []string{"images", "autogen-images", "autogen-cronjob-images"}, rules)
}
