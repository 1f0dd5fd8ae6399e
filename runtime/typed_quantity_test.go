package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// A foreach pattern whose values read the element ("{{
// element.resources.requests.cpu }}", require-qos-guaranteed-foreach) is
// typed: each container's limit is compared with its own request as a
// quantity. Kyverno compares two such texts as durations where both
// parse as one, else as quantities, an absent limit as "0", and reads a
// text with an exponent's minus as a range; an element whose request is
// missing errs, and the first element that does not pass decides. On
// every pair of two containers' requests and limits drawn from quantities
// in their canonical form (zero, whole and milli numbers, which are also
// durations, exponents of either case, signs, binary and decimal
// suffixes) and absent ones, the
// typed form decides as the exact dynamic form, which the Kyverno
// differentials prove against Kyverno's engine; texts not in canonical
// form are judged by the dynamic form itself.
func TestElementQuantitiesDecideAsDynamic(t *testing.T) {
	set, withTyped, dynamic := typedAndDynamic(t, "../examples/kyverno-pattern/require-qos-guaranteed-foreach/policy.yaml", 3)

	// "" is absent; 1000m and 1024Mi are not canonical (1, 1Gi).
	// 1E-3 and -1E-3 are kept as written, and read as ranges by Kyverno
	// as 1e-3 is; 1.5m and +5m are kept too, and are durations.
	values := []string{"", "0", "1", "2", "100m", "5m", "1500m", "1e-3", "1E-3", "-1E-3", "1e3", "1E3", "1k", "1Gi", "1073741824", "1.5m", "+5m", "1000m", "1024Mi"}
	container := func(name, request, limit string) map[string]any {
		res := map[string]any{}
		if request != "" {
			res["requests"] = map[string]any{"cpu": request, "memory": "1Gi"}
		}
		if limit != "" {
			res["limits"] = map[string]any{"cpu": limit, "memory": "1Gi"}
		}
		return map[string]any{"name": name, "image": "app:1", "resources": res}
	}
	decisions := map[string]int{}
	typed, compared := 0, 0
	for _, r1 := range values {
		for _, l1 := range values {
			// The second container passes, errs (no request), fails, or
			// is one whose request is read as a range.
			for _, second := range [][2]string{{"1", "1"}, {"", "1"}, {"1", "2"}, {"1e-3", "1"}} {
				pod := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "Pod",
					"metadata": map[string]any{"name": "p", "namespace": "shop"},
					"spec": map[string]any{"containers": []any{
						container("first", r1, l1), container("second", second[0], second[1]),
					}},
				}}
				req := runtime.RequestFor(pod, nil, "shop")
				req.Offline = true
				want, got := decideErrorsAlike(t, dynamic, req), decideErrorsAlike(t, withTyped, req)
				require.Equal(t, want, got, "requests %q limits %q, then %q", r1, l1, second)
				decisions[outcome(t, want)]++
				compared++
				typed += typedJudged(t, set, req)
			}
		}
	}
	t.Logf("%d pods compared, %d judged by the typed form, 0 differences: %v", compared, typed, decisions)
	assert.Greater(t, typed, compared/3, "the typed form judges every pair written as the API server writes it")
	for _, o := range []string{"allowed", "denied", "error"} {
		assert.Positive(t, decisions[o], "%s is seen: %v", o, decisions)
	}
}

// typedAndDynamic compiles the policy file at path, which must give n
// typed policies, into engines that judge with the typed forms (where an
// object fits their schema) and with the dynamic forms only.
func typedAndDynamic(t *testing.T, path string, n int) (set *ir.PolicySet, withTyped, dynamic *runtime.Engine) {
	t.Helper()
	src, err := compiler.ReadSources([]string{path})
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, n)
	for _, p := range set.Policies {
		require.NotNil(t, p.Dynamic, "%s is typed", p.Name)
	}
	withTyped, err = runtime.NewEngine(set)
	require.NoError(t, err)
	dynamic, err = runtime.NewEngine(dynamicOnly(set))
	require.NoError(t, err)
	return set, withTyped, dynamic
}

// outcome is allowed, denied or error, of a decision decideErrorsAlike
// wrote.
func outcome(t *testing.T, decision string) string {
	var d struct {
		Allowed    bool
		Violations []struct {
			Error bool `json:"error"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(decision), &d))
	switch {
	case d.Allowed:
		return "allowed"
	case len(d.Violations) > 0 && d.Violations[0].Error:
		return "error"
	}
	return "denied"
}
