package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/variants"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// The fast path must decide every review exactly as the reference path
// (the API server's validator, policy by policy): every policy fixture of
// the repository, in every format the compiler reads, on its own objects
// and the shared example manifests, and on seeded variants of each, as
// CREATE, UPDATE from the original and DELETE.

// sharedVariants is how many variants of each shared example manifest are
// compared; fastPathVariants how many of a fixture's own objects:
// FASTPATH_VARIANTS, 15 by default (make test), 50 in make fastpath-full.
const sharedVariants = 6

func fastPathVariants(t *testing.T) int {
	t.Helper()
	v := os.Getenv("FASTPATH_VARIANTS")
	if v == "" {
		return 15
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "FASTPATH_VARIANTS must be a number")
	return n
}

// fastPathFixture is a policy file set and the objects it is judged on.
type fastPathFixture struct {
	name    string
	sources []string
	own     []*unstructured.Unstructured
}

func TestFastPathDecidesAsReference(t *testing.T) {
	shared := objectsIn(t, "../examples/manifests", "../examples/more")
	var compared, fixtures int
	ownVariants := fastPathVariants(t)
	for _, f := range fastPathFixtures(t) {
		src, err := compiler.ReadSources(f.sources)
		require.NoError(t, err, f.name)
		set, diags := compiler.Compile(src, compiler.Options{})
		if len(diags) > 0 || len(set.Policies) == 0 {
			continue
		}
		fast, err := runtime.NewEngine(set)
		require.NoError(t, err, f.name)
		ref := fast.OnPath(runtime.ReferencePath)
		fixtures++
		for _, o := range f.own {
			compared += compareOnVariants(t, f.name, fast, ref, o, ownVariants)
		}
		for _, o := range shared {
			compared += compareOnVariants(t, f.name, fast, ref, o, sharedVariants)
		}
	}
	t.Logf("fast vs reference: %d fixtures, %d reviews compared, 0 differences", fixtures, compared)
	require.Greater(t, fixtures, 40)
}

// compareOnVariants compares both paths on o and n variants of it, as
// CREATE, UPDATE from o, and DELETE; it returns how many reviews it compared.
func compareOnVariants(t *testing.T, fixture string, fast, ref *runtime.Engine, o *unstructured.Unstructured, n int) int {
	t.Helper()
	vs, err := variants.Generate(o.Object, variants.Options{Seed: 7, Count: n})
	require.NoError(t, err)
	objects := []variants.Variant{{Name: "original", Object: o.Object}}
	objects = append(objects, vs...)
	count := 0
	for _, v := range objects {
		obj := &unstructured.Unstructured{Object: v.Object}
		reqs := map[string]*runtime.Request{
			"CREATE": runtime.RequestFor(obj, nil, "shop"),
			"UPDATE": runtime.RequestFor(obj, o, "shop"),
		}
		if v.Name == "original" {
			del := runtime.RequestFor(o, nil, "shop")
			del.Operation, del.OldObject, del.Object = ir.Delete, del.Object, nil
			reqs["DELETE"] = del
		}
		for op, req := range reqs {
			req.NamespaceLabels = map[string]string{"env": "prod"}
			want, got := decide(t, ref, req), decide(t, fast, req)
			if want != got {
				t.Fatalf("%s: %s %s (%s): the fast path decided\n%s\nthe reference path\n%s\nobject: %s",
					fixture, op, describe(o), v.Name, got, want, mustJSON(t, v.Object))
			}
			count++
		}
	}
	return count
}

// decide is everything a review returns, as JSON.
func decide(t *testing.T, e *runtime.Engine, req *runtime.Request) string {
	t.Helper()
	res, err := e.Admit(context.Background(), req)
	if err != nil {
		return "error: " + err.Error()
	}
	out := struct {
		Allowed bool
		Result  *runtime.Result
		Object  map[string]any
	}{res.Allowed(), res, nil}
	if res.Object != nil {
		out.Object = res.Object.Object
	}
	return mustJSON(t, out)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func describe(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetName()
}

// fastPathFixtures are the golden corpus's policy inputs and every policy
// example (Kyverno, Kyverno patterns, Gatekeeper), each with the objects
// beside it.
func fastPathFixtures(t *testing.T) []fastPathFixture {
	t.Helper()
	seen := map[string]bool{}
	var out []fastPathFixture
	add := func(name string, sources []string, objectDirs ...string) {
		key := strings.Join(sources, ",")
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, fastPathFixture{name: name, sources: sources, own: objectsIn(t, objectDirs...)})
	}
	cases, err := filepath.Glob("../golden/*/")
	require.NoError(t, err)
	for _, dir := range cases {
		if strings.HasPrefix(filepath.Base(dir), "error-") {
			continue
		}
		if in := goldenInput(dir); in != "" {
			add(filepath.Base(dir), []string{in}, filepath.Dir(in))
		}
	}
	for _, pattern := range []string{"../examples/kyverno/*/policy.yaml", "../examples/kyverno-pattern/*/policy.yaml", "../examples/kyverno-mutate/*/policy.yaml"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			add(f, []string{f}, filepath.Join(filepath.Dir(f), ".kyverno-test"))
		}
	}
	templates, err := filepath.Glob("../examples/gatekeeper/*/template.yaml")
	require.NoError(t, err)
	for _, tpl := range templates {
		dir := filepath.Dir(tpl)
		add(dir, []string{tpl, filepath.Join(dir, "constraint.yaml")}, filepath.Join(dir, "samples"))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// goldenInput is a golden case's policy file, or "" when it has none.
func goldenInput(dir string) string {
	for _, name := range []string{"policy.yaml", "policy.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	ref, err := os.ReadFile(filepath.Join(dir, "policy.ref"))
	if err != nil {
		return ""
	}
	return filepath.Join("..", strings.TrimSpace(string(ref)))
}

// objectsIn reads the objects (not the policies, tests or suites) in dirs.
func objectsIn(t *testing.T, dirs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		_ = runtime.EachManifest([]string{d}, func(string) {}, func(m runtime.Manifest) error {
			if !policyGroups[m.Object.GroupVersionKind().Group] && m.Object.GetKind() != "" {
				out = append(out, m.Object)
			}
			return nil
		})
	}
	return out
}

var policyGroups = map[string]bool{
	"admissionregistration.k8s.io": true, "kyverno.io": true, "policies.kyverno.io": true, "cli.kyverno.io": true,
	"templates.gatekeeper.sh": true, "constraints.gatekeeper.sh": true, "test.gatekeeper.sh": true, "expansion.gatekeeper.sh": true,
}

// budgetPolicy spends CEL cost in proportion to the square of a pod's
// containers, in fourteen variables (the same expression, so the fast path
// shares one value and must still charge each) read by one validation, a
// message and an audit annotation: as pods grow, first the whole policy
// runs out of the runtime budget, then each variable out of the
// per-expression limit.
var budgetPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: container-names
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["pods"]
  variables:
  - name: names
    expression: object.spec.containers.map(c, c.name)
  - name: q1
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q2
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q3
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q4
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q5
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q6
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q7
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q8
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q9
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q10
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q11
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q12
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q13
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  - name: q14
    expression: variables.names.filter(n, variables.names.exists(m, m == n + 'x'))
  validations:
  - expression: "size(variables.q1) + size(variables.q2) + size(variables.q3) + size(variables.q4) + size(variables.q5) + size(variables.q6) + size(variables.q7) + size(variables.q8) + size(variables.q9) + size(variables.q10) + size(variables.q11) + size(variables.q12) + size(variables.q13) + size(variables.q14) == 0"
    messageExpression: "'names: ' + variables.q1.join(', ')"
  - expression: variables.names.all(n, n.startsWith('c'))
    message: every name starts with c
  auditAnnotations:
  - key: count
    valueExpression: string(size(variables.q2))
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: container-names
spec:
  policyName: container-names
  validationActions: [Deny]
`

// TestFastPathCostBudgets compares both paths where the API server's cost
// budgets run out: pods whose container lists make the policy's
// expressions, and the variables they share, cost more than the budgets.
func TestFastPathCostBudgets(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "budget.yaml", Data: []byte(budgetPolicy)}}, compiler.Options{})
	require.Empty(t, diags)
	fast, err := runtime.NewEngine(set)
	require.NoError(t, err)
	ref := fast.OnPath(runtime.ReferencePath)
	var outOfBudget int
	for _, n := range []int{1, 100, 300, 400} {
		for _, name := range []string{"c-%d", "container-number-%d"} {
			pod := podWithContainers(n, name)
			req := runtime.RequestFor(pod, nil, "shop")
			want, got := decide(t, ref, req), decide(t, fast, req)
			require.Equal(t, want, got, "%d containers named %q", n, name)
			if strings.Contains(want, "cost") {
				outOfBudget++
			}
		}
	}
	require.Positive(t, outOfBudget, "no pod ran out of a cost budget; make them larger")
}

func podWithContainers(n int, name string) *unstructured.Unstructured {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{"name": fmt.Sprintf(name, i), "image": "nginx"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "many", "namespace": "shop"},
		"spec":     map[string]any{"containers": containers},
	}}
}
