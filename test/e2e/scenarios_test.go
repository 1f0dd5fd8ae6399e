//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// offline is admitc test's decision for one object.
type offline struct {
	Name       string `json:"name"`
	Allowed    bool   `json:"allowed"`
	Violations []struct {
		Policy  string   `json:"policy"`
		Actions []string `json:"actions"`
		Message string   `json:"message"`
	} `json:"violations"`
	Patch []map[string]any `json:"patch"`
}

func admitcTest(t *testing.T, policies string, files ...string) map[string]offline {
	t.Helper()
	out, stderr, code := admitc(t, append([]string{"test", "-o", "json", "--namespace", "shop", "--policies", policies}, files...)...)
	require.Contains(t, []int{0, 1}, code, stderr)
	return parseOffline(t, out)
}

// The manifests the API server judges on create (ephemeral containers cannot
// be set on create; the kubectl debug case is TestKubectlDebugThroughTheWebhook).
var createFixtures = []string{
	"examples/manifests/cronjob-tag-only.json", "examples/manifests/deployment-good.json", "examples/manifests/deployment-privileged.json",
	"examples/manifests/good.json", "examples/manifests/lookalike-registry.json", "examples/manifests/missing-label.json",
	"examples/manifests/no-limit.json", "examples/manifests/privileged.json", "examples/manifests/root-user.json",
	"examples/manifests/tag-only.json", "examples/manifests/untrusted-registry.json",
	"examples/more/init-privileged.json", "examples/more/lookalike-hub.json", "examples/more/short-name.json",
	"examples/more/statefulset-root.json", "examples/more/hostpath-root.json", "examples/more/deployment-hostpath.json",
}

var vapPolicy = regexp.MustCompile(`(?:ValidatingAdmissionPolicy |policy )'([^']+)' with binding`)

func TestVAPAndMAPDecideAsAdmitcTest(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	out, stderr, code := admitc(t, "compile", "--policies", "examples/policies/policies.json", "--backend", "vap,map", "--namespace", "shop")
	require.Equal(t, 0, code, stderr)
	apply(t, out, false)
	eventually(t, "the VAPs and MAPs to take effect", func() bool {
		a := dryRunCreate(t, manifest(t, "examples/manifests/privileged.json"), "shop")
		g := dryRunCreate(t, manifest(t, "examples/manifests/good.json"), "shop")
		return !a.allowed() && g.allowed() && g.obj.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["requests"] != nil
	})
	want := admitcTest(t, "examples/policies/policies.json", createFixtures...)
	for _, file := range createFixtures {
		t.Run(filepath.Base(file), func(t *testing.T) {
			obj := manifest(t, file)
			w := want[obj.GetName()]
			// Policies load one by one: retry until the API server agrees or
			// settleTimeout passes, then report the last disagreement.
			var got answer
			var problems []string
			deadline := time.Now().Add(settleTimeout)
			for {
				got = dryRunCreate(t, obj, "shop")
				if problems = disagreements(w, obj, got); len(problems) == 0 || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			assert.Empty(t, problems)
			if got.err != nil {
				t.Logf("API server: %v", got.err)
			}
			if len(got.warnings) > 0 {
				t.Logf("API server warnings: %q", got.warnings)
			}
		})
	}
}

// disagreements lists how the API server's answer differs from admitc test's.
func disagreements(w offline, in *unstructured.Unstructured, got answer) []string {
	var out []string
	if w.Allowed != got.allowed() {
		return []string{fmt.Sprintf("admitc test says allowed=%v, the API server said: %v", w.Allowed, got.err)}
	}
	if !got.allowed() {
		m := vapPolicy.FindStringSubmatch(got.err.Error())
		if m == nil {
			return []string{fmt.Sprintf("denied by something other than a VAP: %v", got.err)}
		}
		found := false
		for _, v := range w.Violations {
			found = found || (v.Policy == m[1] && strings.Contains(got.err.Error(), v.Message))
		}
		if !found {
			out = append(out, fmt.Sprintf("the API server's denial %q is not one of admitc's %+v", got.err, w.Violations))
		}
	}
	for _, v := range w.Violations {
		if contains(v.Actions, "Warn") && !anyContains(got.warnings, v.Message) {
			out = append(out, fmt.Sprintf("warning %q missing from %q", v.Message, got.warnings))
		}
	}
	if got.allowed() {
		out = append(out, requestDifferences(w, got.obj)...)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// requestDifferences checks that the API server's mutated object carries
// the requests admitc's patch adds.
func requestDifferences(w offline, server *unstructured.Unstructured) []string {
	var out []string
	for _, op := range w.Patch {
		path := op["path"].(string)
		if !strings.Contains(path, "/resources") {
			continue
		}
		got, found := nested(server.Object, strings.Split(strings.TrimPrefix(path, "/"), "/"))
		if !found || !reflect.DeepEqual(op["value"], got) {
			out = append(out, fmt.Sprintf("at %s admitc adds %v, the API server's object has %v", path, op["value"], got))
		}
	}
	return out
}

func nested(obj any, fields []string) (any, bool) {
	for _, f := range fields {
		switch o := obj.(type) {
		case map[string]any:
			v, ok := o[f]
			if !ok {
				return nil, false
			}
			obj = v
		case []any:
			i := 0
			for _, c := range f {
				i = i*10 + int(c-'0')
			}
			if i >= len(o) {
				return nil, false
			}
			obj = o[i]
		default:
			return nil, false
		}
	}
	return obj, true
}

func TestNaiveCELAndFailurePolicy(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	out, stderr, code := admitc(t, "vap", "--policies", "examples/policies/cel-naive.json", "--namespace", "shop")
	require.Equal(t, 0, code, stderr)
	apply(t, out, false)
	good := manifest(t, "examples/manifests/good.json")
	var a answer
	eventually(t, "the naive policy to deny the good pod", func() bool { a = dryRunCreate(t, good, "shop"); return !a.allowed() })
	assert.Contains(t, a.err.Error(), "expression 'object.spec.containers.all(c, c.securityContext.privileged == false)' resulted in error: no such key: securityContext")
	w := admitcTest(t, "examples/policies/cel-naive.json", "examples/manifests/good.json")
	require.Len(t, w["good"].Violations, 1)
	assert.Contains(t, a.err.Error(), w["good"].Violations[0].Message)

	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	_, err := kc.dynamic.Resource(gvr).Patch(context.Background(), "cc-admission-naive-privileged", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/failurePolicy","value":"Ignore"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(t, "failurePolicy Ignore to admit the good pod", func() bool { return dryRunCreate(t, good, "shop").allowed() })
}

func TestMAPLabelMatchesAdmitcPatch(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	out, stderr, code := admitc(t, "compile", "--policies", "examples/policies/labels-policy.json", "--backend", "map", "--namespace", "shop")
	require.Equal(t, 0, code, stderr)
	apply(t, out, false)
	w := admitcTest(t, "examples/policies/labels-policy.json", "examples/manifests/good.json")
	require.Equal(t, "/metadata/labels/cloudcaptain.io~1mutated-by", w["good"].Patch[0]["path"])
	var a answer
	eventually(t, "the MAP to label pods", func() bool {
		a = dryRunCreate(t, manifest(t, "examples/manifests/good.json"), "shop")
		return a.allowed() && a.obj.GetLabels()["cloudcaptain.io/mutated-by"] != ""
	})
	assert.Equal(t, w["good"].Patch[0]["value"], a.obj.GetLabels()["cloudcaptain.io/mutated-by"])
}

func TestGoldenOutputsAreValidForTheAPIServer(t *testing.T) {
	files, err := filepath.Glob(repo + "golden/*/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		switch filepath.Base(f) {
		case "vap.yaml", "map.yaml", "webhook.yaml":
		default:
			continue // inputs, and Kyverno outputs (no Kyverno CRDs here)
		}
		t.Run(strings.TrimPrefix(f, repo), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			apply(t, string(data), true)
		})
	}
}
