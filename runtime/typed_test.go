package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/variants"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// A Kyverno rule translated against its kinds' schema must decide every
// object shaped as the schema says exactly as its exact dynamic
// translation (which the Kyverno differentials prove against Kyverno's
// engine): decision, message and the offline skip annotation, on every
// Kyverno fixture's objects and their seeded variants, as CREATE and as
// UPDATE from the original. An object the schema does not fit is judged
// by the dynamic form itself; the test counts the typed judgements.
func TestTypedDecidesAsDynamic(t *testing.T) {
	dirs, err := filepath.Glob("../examples/kyverno*/*/policy.yaml")
	require.NoError(t, err)
	typed, compared := 0, 0
	only := regexp.MustCompile(os.Getenv("TYPED_RUN"))
	for _, policy := range dirs {
		if !only.MatchString(policy) {
			continue
		}
		src, err := compiler.ReadSources([]string{policy})
		require.NoError(t, err)
		set, diags := compiler.Compile(src, compiler.Options{})
		if len(diags) > 0 || !hasTyped(set) {
			continue
		}
		withTyped, err := runtime.NewEngine(set)
		require.NoError(t, err, policy)
		dynamic, err := runtime.NewEngine(dynamicOnly(set))
		require.NoError(t, err, policy)
		for _, o := range objectsIn(t, filepath.Join(filepath.Dir(policy), ".kyverno-test")) {
			vs, err := variants.Generate(o.Object, variants.Options{Seed: 11, Count: typedVariants(t), PodSecurity: true})
			require.NoError(t, err)
			for _, v := range append([]variants.Variant{{Name: "original", Object: o.Object}}, vs...) {
				obj := &unstructured.Unstructured{Object: v.Object}
				for op, req := range map[string]*runtime.Request{"CREATE": runtime.RequestFor(obj, nil, "shop"), "UPDATE": runtime.RequestFor(obj, o, "shop")} {
					req.Offline = true
					want, got := decideErrorsAlike(t, dynamic, req), decideErrorsAlike(t, withTyped, req)
					if want != got {
						t.Fatalf("%s: %s %s (%s): the typed form decided\n%s\nthe dynamic form\n%s\nobject: %s", policy, op, describe(o), v.Name, got, want, mustJSON(t, v.Object))
					}
					compared++
					typed += typedJudged(t, set, req)
				}
			}
		}
	}
	t.Logf("typed vs dynamic: %d reviews compared, %d judged by a typed form, 0 differences", compared, typed)
	if os.Getenv("TYPED_RUN") == "" {
		require.Greater(t, typed, 400)
	}
}

// decideErrorsAlike is decide with every policy whose evaluation failed
// reduced to one error violation: which expression failed, and how the
// error reads, differ between the two forms (the typed one fails where
// it selects a missing field, the dynamic one where its variables do).
func decideErrorsAlike(t *testing.T, e *runtime.Engine, req *runtime.Request) string {
	t.Helper()
	res, err := e.Admit(context.Background(), req)
	if err != nil {
		return "error: " + err.Error()
	}
	failed := map[string]bool{}
	for _, v := range res.Violations {
		if v.Error {
			failed[v.Policy] = true
		}
	}
	var vs []runtime.Violation
	for _, v := range res.Violations {
		switch {
		case !failed[v.Policy]:
			vs = append(vs, v)
		case v.Error && !slices.ContainsFunc(vs, func(w runtime.Violation) bool { return w.Policy == v.Policy }):
			vs = append(vs, runtime.Violation{Policy: v.Policy, Binding: v.Binding, Actions: v.Actions, Message: "evaluation error", Error: true})
		}
	}
	annotations := map[string]string{}
	for k, v := range res.AuditAnnotations {
		ofFailed := false
		for p := range failed {
			ofFailed = ofFailed || strings.HasPrefix(k, p+".")
		}
		if !ofFailed {
			annotations[k] = v
		}
	}
	out := struct {
		Allowed     bool
		Violations  []runtime.Violation
		Annotations map[string]string
		Fired       []string
		Object      map[string]any
	}{res.Allowed(), vs, annotations, res.Fired, nil}
	if res.Object != nil {
		out.Object = res.Object.Object
	}
	return mustJSON(t, out)
}

// typedVariants is how many variants of each fixture object are compared:
// TYPED_VARIANTS, 6 by default (make test); make fastpath-full runs 40.
// TYPED_RUN, a regular expression, keeps only the policies it matches.
func typedVariants(t *testing.T) int {
	t.Helper()
	v := os.Getenv("TYPED_VARIANTS")
	if v == "" {
		return 6
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "TYPED_VARIANTS must be a number")
	return n
}

func hasTyped(set *ir.PolicySet) bool {
	for _, p := range set.Policies {
		if p.Dynamic != nil {
			return true
		}
	}
	return false
}

// dynamicOnly is set with every typed policy replaced by its dynamic form.
func dynamicOnly(set *ir.PolicySet) *ir.PolicySet {
	out := *set
	out.Policies = append([]ir.Policy(nil), set.Policies...)
	for i, p := range out.Policies {
		if p.Dynamic != nil {
			out.Policies[i] = *p.Dynamic
		}
	}
	return &out
}

// typedJudged counts the typed policies of set that judge req with their
// typed form.
func typedJudged(t *testing.T, set *ir.PolicySet, req *runtime.Request) int {
	n := 0
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Dynamic == nil || !matchesKind(p, req.Kind.Kind) {
			continue
		}
		ok, err := runtime.FitsSchema(p, req)
		require.NoError(t, err)
		if ok {
			n++
		}
	}
	return n
}

// matchesKind says p's rules name the resource of kind (its plural as
// the built-in kinds write it: pods, networkpolicies, ingresses).
func matchesKind(p *ir.Policy, kind string) bool {
	k := strings.ToLower(kind)
	plural := k + "s"
	switch {
	case strings.HasSuffix(k, "y"):
		plural = k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"):
		plural = k + "es"
	}
	for _, r := range p.MatchConstraints.ResourceRules {
		if slices.Contains(r.Resources, plural) {
			return true
		}
	}
	return false
}

// The same holds for rules on custom resources written against their
// CRD's schema (--crd): cert-manager's Certificate and Flux's HelmRelease,
// on the objects of the golden CRD case and their variants.
func TestTypedCRDDecidesAsDynamic(t *testing.T) {
	crds, err := compiler.ReadCRDs([]string{"../golden/testdata/crds"})
	require.NoError(t, err)
	src, err := compiler.ReadSources([]string{"../golden/kyverno-crd/policy.yaml"})
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{CRDs: crds})
	require.Empty(t, diags.Error())
	require.True(t, hasTyped(set))
	withTyped, err := runtime.NewEngine(set)
	require.NoError(t, err)
	dynamic, err := runtime.NewEngine(dynamicOnly(set))
	require.NoError(t, err)
	typed, compared := 0, 0
	for _, o := range objectsIn(t, "../golden/kyverno-crd") {
		vs, err := variants.Generate(o.Object, variants.Options{Seed: 11, Count: 5 * typedVariants(t)})
		require.NoError(t, err)
		for _, v := range append([]variants.Variant{{Name: "original", Object: o.Object}}, vs...) {
			obj := &unstructured.Unstructured{Object: v.Object}
			for op, req := range map[string]*runtime.Request{"CREATE": runtime.RequestFor(obj, nil, "shop"), "UPDATE": runtime.RequestFor(obj, o, "shop")} {
				req.Offline = true
				want, got := decide(t, dynamic, req), decide(t, withTyped, req)
				if want != got {
					t.Fatalf("%s %s (%s): the typed form decided\n%s\nthe dynamic form\n%s\nobject: %s", op, describe(o), v.Name, got, want, mustJSON(t, v.Object))
				}
				compared++
				for i := range set.Policies {
					p := &set.Policies[i]
					if p.Dynamic == nil || p.MatchConstraints.ResourceRules[0].APIGroups[0] != obj.GroupVersionKind().Group {
						continue
					}
					ok, err := runtime.FitsSchema(p, req)
					require.NoError(t, err)
					if ok {
						typed++
					}
				}
			}
		}
	}
	t.Logf("typed vs dynamic on custom resources: %d reviews compared, %d typed judgements, 0 differences", compared, typed)
	require.Greater(t, typed, 100)
}

// A projection of strings in a typed deny message is written as Kyverno
// writes it, encoding/json's text (HTML characters escaped), by the
// typed form on an object it judges; null where the projection is.
func TestTypedListMessageIsKyvernosJSON(t *testing.T) {
	src, err := compiler.ReadSources([]string{"../examples/kyverno-pattern/deny-ingress-host/policy.yaml"})
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags.Error())
	require.True(t, hasTyped(set))
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	hosts := []any{"a.internal.example.com", `x<y>&"z\w`, "shop.example.com"}
	var rules []any
	for _, h := range hosts {
		rules = append(rules, map[string]any{"host": h})
	}
	rules = append(rules, map[string]any{"http": map[string]any{}})
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec":     map[string]any{"rules": rules},
	}}
	req := runtime.RequestFor(obj, nil, "shop")
	fits, err := runtime.FitsSchema(&set.Policies[0], req)
	require.NoError(t, err)
	require.True(t, fits, "judged by the typed form")
	res, err := e.Admit(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, res.Violations, 1)
	text, err := json.Marshal(hosts)
	require.NoError(t, err)
	assert.Contains(t, res.Violations[0].Message, "Ingress hosts "+string(text)+" may not use the internal domain.")
}
