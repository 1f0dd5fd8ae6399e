package runtime_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// Kyverno's label_match (a literal map against the selector or the
// labels, null read as {}; a key whose value is "" must be there), pattern_match (a wildcard against a field, or against x || ”)
// and to_array (of a list that is never null: the list) are typed: each
// rule of testdata/typed-functions.yaml decides every Service below,
// CREATE and UPDATE, as its exact dynamic form (which
// TestFunctionsAsKyverno proves against Kyverno's JMESPath), and a typed
// form judges each rule.
func TestTypedFunctionsDecideAsDynamic(t *testing.T) {
	set, withTyped, dynamic := typedAndDynamic(t, "testdata/typed-functions.yaml", 5)

	selectors := []map[string]any{nil, {}, {"exposure": "public"}, {"exposure": "public", "tier": "web"},
		{"exposure": "public", "tier": "web", "app": "shop"}, {"exposure": "private", "tier": "web"}, {"tier": ""}}
	names := []string{"public-shop", "public-", "public", "shop"}
	teams := []any{nil, "", "team-1", "team-12", "TEAM-1"}
	canaries := []any{nil, "", "yes"}
	ips := []any{nil, []any{}, []any{"10.0.0.1"}, []any{"10.0.0.1", "10.0.0.2", "10.0.0.3"}}
	outcomes := map[string]int{}
	typed, compared := 0, 0
	for _, sel := range selectors {
		for _, name := range names {
			for i, team := range teams {
				for _, ip := range ips {
					meta := map[string]any{"name": name, "namespace": "shop"}
					labels := map[string]any{}
					if team != nil {
						labels["team"] = team
					}
					if c := canaries[i%len(canaries)]; c != nil {
						labels["canary"] = c
					}
					if len(labels) > 0 {
						meta["labels"] = labels
					}
					spec := map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
					if sel != nil {
						spec["selector"] = sel
					}
					if ip != nil {
						spec["externalIPs"] = ip
					}
					svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}}
					old := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
						"metadata": map[string]any{"name": name, "namespace": "shop"}, "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}}
					for _, req := range []*runtime.Request{runtime.RequestFor(svc, nil, "shop"), runtime.RequestFor(svc, old, "shop")} {
						req.Offline = true
						want, got := decideErrorsAlike(t, dynamic, req), decideErrorsAlike(t, withTyped, req)
						require.Equal(t, want, got, "selector %v name %q team %v externalIPs %v", sel, name, team, ip)
						outcomes[outcome(t, want)]++
						compared++
						typed += typedJudged(t, set, req)
					}
				}
			}
		}
	}
	t.Logf("%d reviews compared, %d typed judgements (of %d), 0 differences: %v", compared, typed, 5*compared, outcomes)
	assert.Equal(t, 5*compared, typed, "every Service fits the schema")
	assert.Positive(t, outcomes["allowed"])
	assert.Positive(t, outcomes["denied"])
}

// pattern_match('*', x) is true whatever x is, so its typed form would
// not read x; Kyverno's function fails where x is missing: such a rule
// keeps the exact form.
func TestPatternMatchOfAnythingOnAMissingFieldIsExact(t *testing.T) {
	policy := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: any-team
spec:
  rules:
  - name: team
    match:
      any:
      - resources:
          kinds: [Service]
    validate:
      failureAction: Enforce
      message: "A team label is required."
      deny:
        conditions:
          any:
          - key: "{{ pattern_match('*', request.object.metadata.labels.team) }}"
            operator: Equals
            value: false
`
	set, diags := compiler.Compile([]compiler.Source{{Name: "any-team.yaml", Data: []byte(policy)}}, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, 1)
	assert.True(t, slices.ContainsFunc(set.Policies[0].Variables, func(v ir.NamedExpression) bool { return v.Name == "kyvernoDeny" }),
		"the exact form's variables: %+v", set.Policies[0].Variables)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "s", "namespace": "shop"}, "spec": map[string]any{}}}
	req := runtime.RequestFor(svc, nil, "shop")
	req.Offline = true
	assert.Equal(t, "error", outcome(t, decideErrorsAlike(t, e, req)), "Kyverno's function fails on a missing label")
}

// A pattern value "{{ request.namespace }}-*" is plain text whatever the
// namespace, which the API server keeps a DNS label: the typed form reads
// serviceAccountName.startsWith(request.namespace + "-"). Offline, a
// namespace that is not a DNS label (one with a '*', which Kyverno would
// read as a wildcard) is judged by the exact form, as Kyverno judges it.
func TestNamespacePrefixIsStartsWith(t *testing.T) {
	set, withTyped, dynamic := typedAndDynamic(t, "../examples/kyverno-pattern/require-namespace-scoped-identity/policy.yaml", 9)
	p := set.Policies[0]
	require.Equal(t, "require-namespace-scoped-identity.service-account-in-namespace", p.Name)
	assert.Contains(t, p.Validations[0].Expression, `.spec.serviceAccountName.startsWith(request.namespace + "-")`)
	assert.NotContains(t, p.Validations[0].Expression, "matches(", "no wildcard or operator test is left")
	assert.True(t, slices.ContainsFunc(p.SchemaReads, func(r ir.SchemaRead) bool {
		return r.Path == "metadata.namespace" && r.Format == ir.FormatDNSLabel
	}), "%+v", p.SchemaReads)
	pod := func(ns, sa string) *runtime.Request {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": ns, "labels": map[string]any{"team": ns, "app.kubernetes.io/instance": "p"}},
			"spec":     map[string]any{"serviceAccountName": sa, "containers": []any{map[string]any{"name": "c", "image": "app:1"}}}}}
		req := runtime.RequestFor(obj, nil, ns)
		req.Offline = true
		return req
	}
	for _, c := range []struct {
		ns, sa  string
		allowed bool
		typed   bool
	}{
		{"shop", "shop-api", true, true},
		{"shop", "shop-", true, true},
		{"shop", "shopping-api", false, true},
		{"shop", "default", false, true},
		// Kyverno reads team*-* as a wildcard: team-x-y matches it.
		{"team*", "team-x-y", true, false},
	} {
		req := pod(c.ns, c.sa)
		want, got := decideErrorsAlike(t, dynamic, req), decideErrorsAlike(t, withTyped, req)
		require.Equal(t, want, got, "%s %s", c.ns, c.sa)
		assert.Equal(t, c.allowed, outcome(t, got) == "allowed", "%s %s: %s", c.ns, c.sa, got)
		fits, err := runtime.FitsSchema(&set.Policies[0], req)
		require.NoError(t, err)
		assert.Equal(t, c.typed, fits, "%s %s: judged by the typed form", c.ns, c.sa)
	}
}
