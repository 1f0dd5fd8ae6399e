//go:build e2e

package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const defaultsDir = "internal/cli/testdata/defaults/"

// defaultsCases are policies that read fields only the API server's
// defaulting sets, and manifests that rely on it (dependsOnDefaults: the
// manifest as written is decided differently).
// A sentinel is a manifest changed so that the policy denies it: once the API
// server denies it, the policy is in effect.
var defaultsCases = []struct {
	policy    string
	manifests map[string]bool
	sentinel  func(t *testing.T) *unstructured.Unstructured
}{
	{"service-policy.yaml", map[string]bool{"service.yaml": true, "service-lb.yaml": false},
		func(t *testing.T) *unstructured.Unstructured { return manifest(t, defaultsDir+"service-lb.yaml") }},
	{"pod-policy.yaml", map[string]bool{"pod-latest.yaml": true, "pod-volume.yaml": true},
		func(t *testing.T) *unstructured.Unstructured {
			pod := manifest(t, defaultsDir+"pod-latest.yaml")
			c := pod.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["imagePullPolicy"] = "IfNotPresent"
			return pod
		}},
	{"deployment-policy.yaml", map[string]bool{"deployment.yaml": true},
		func(t *testing.T) *unstructured.Unstructured {
			d := manifest(t, defaultsDir+"deployment.yaml")
			require.NoError(t, unstructured.SetNestedField(d.Object, int64(20), "spec", "replicas"))
			return d
		}},
}

// TestOfflineDefaultsDecideAsTheAPIServer shows that `admitc test` decides
// manifests that rely on the API server's defaults (a Service without a type,
// a :latest image's pull policy, a volume without a source, a Deployment
// without replicas) as the API server does with the generated VAPs, and that
// judging them as written (--no-defaults) would not.
func TestOfflineDefaultsDecideAsTheAPIServer(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	for _, c := range defaultsCases {
		out, stderr, code := admitc(t, "vap", "--policies", defaultsDir+c.policy, "--namespace", "shop")
		require.Equal(t, 0, code, stderr)
		apply(t, out, false)
	}
	for _, c := range defaultsCases {
		eventually(t, c.policy+" to take effect", func() bool { return !dryRunCreate(t, c.sentinel(t), "shop").allowed() })
	}
	for _, c := range defaultsCases {
		var files []string
		for f := range c.manifests {
			files = append(files, defaultsDir+f)
		}
		want := offlineDecisions(t, nil, defaultsDir+c.policy, files...)
		asWritten := offlineDecisions(t, []string{"--no-defaults"}, defaultsDir+c.policy, files...)
		for f, dependsOnDefaults := range c.manifests {
			t.Run(f, func(t *testing.T) {
				obj := manifest(t, defaultsDir+f)
				got, problems := decideUntilAgreed(t, want[obj.GetName()], obj)
				assert.Empty(t, problems)
				if dependsOnDefaults {
					assert.NotEqual(t, asWritten[obj.GetName()].Allowed, got.allowed(),
						"judged as written, %s would be decided differently from the API server", f)
				}
			})
		}
	}
}

// offlineDecisions runs admitc test -o json in namespace shop with flags and
// returns its decisions by object name.
func offlineDecisions(t *testing.T, flags []string, policies string, files ...string) map[string]offline {
	t.Helper()
	args := append(append([]string{"test", "-o", "json", "--namespace", "shop", "--policies", policies}, flags...), files...)
	out, stderr, code := admitc(t, args...)
	require.Contains(t, []int{0, 1}, code, stderr)
	var doc struct {
		Results []offline `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	byName := map[string]offline{}
	for _, r := range doc.Results {
		byName[r.Name] = r
	}
	return byName
}

// decideUntilAgreed dry-run creates obj in shop until the API server agrees
// with w (policies load one by one) or settleTimeout passes, and returns the last answer
// and its disagreements.
func decideUntilAgreed(t *testing.T, w offline, obj *unstructured.Unstructured) (answer, []string) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		got := dryRunCreate(t, obj, "shop")
		problems := disagreements(w, obj, got)
		if len(problems) == 0 || time.Now().After(deadline) {
			return got, problems
		}
		time.Sleep(200 * time.Millisecond)
	}
}
