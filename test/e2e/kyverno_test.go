//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kyvernoOffline is one object of `admitc test -o json`, with its key.
type kyvernoOffline struct {
	offline
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
}

// TestKyvernoPoliciesAsVAPs compiles every Kyverno fixture (ClusterPolicy
// with validate.cel, pattern, deny, foreach or mutate rules, Policy,
// ValidatingPolicy, MutatingPolicy) with --backend vap,map, applies
// the output to the API server, and checks that every resource of the
// fixture's Kyverno test is decided as `admitc test` decides it on the
// original policy: verdict, message and mutation. Namespaces are created
// as the resources name them, and admitc test reads the labels the API
// server gave them.
func TestKyvernoPoliciesAsVAPs(t *testing.T) {
	policies, err := filepath.Glob(repo + "examples/kyverno/*/policy.yaml")
	require.NoError(t, err)
	patterns, err := filepath.Glob(repo + "examples/kyverno-pattern/*/policy.yaml")
	require.NoError(t, err)
	mutates, err := filepath.Glob(repo + "examples/kyverno-mutate/*/policy.yaml")
	require.NoError(t, err)
	policies = append(append(policies, patterns...), mutates...)
	require.NotEmpty(t, policies)
	compared := 0
	for _, abs := range policies {
		policy := strings.TrimPrefix(abs, repo)
		dir := filepath.Dir(policy)
		resources := dir + "/.kyverno-test/resources.yaml"
		if _, err := os.Stat(repo + resources); err != nil {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			stream, stderr, code := admitc(t, "compile", "--backend", "vap,map", "--policies", policy)
			require.Equal(t, 0, code, stderr)
			compared += decideAsAdmitcTest(t, stream, policy, resources)
		})
	}
	t.Logf("%d resources of %d Kyverno fixtures checked (those the API server refused outside admission are logged above)", compared, len(policies))
}

// decideAsAdmitcTest applies a VAP/MAP stream to the API server and checks
// that every object of resources is decided as `admitc test --policies
// policy` decides it: verdict, message and mutation. It returns how many
// objects it checked.
func decideAsAdmitcTest(t *testing.T, stream, policy, resources string) int {
	t.Helper()
	objs := decode(t, resources, mustRead(t, resources))
	for _, o := range objs {
		if o.GetNamespace() == "" && !clusterScoped(o.GetKind()) {
			o.SetNamespace("default")
		}
		ensureNamespace(t, o.GetNamespace())
	}
	labels := liveNamespaceLabels(t, objs)
	out, stderr, code := admitc(t, "test", "-o", "json", "--namespace-labels", labels, "--policies", policy, resources)
	require.Contains(t, []int{0, 1}, code, stderr)
	var doc struct {
		Results []kyvernoOffline `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	want := map[string]offline{}
	for _, r := range doc.Results {
		want[r.Kind+"/"+r.Namespace+"/"+r.Name] = r.offline
	}
	apply(t, stream, false)
	defer deleteVAPs(t, stream)
	for _, o := range objs {
		w, ok := want[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()]
		require.True(t, ok, "admitc test judged no %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		assert.Empty(t, agreeOnAPIServer(t, resources, o, o.GetNamespace(), w), "%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
	return len(objs)
}

// liveNamespaceLabels writes the labels the API server holds for the
// objects' namespaces to a --namespace-labels file and returns its path.
func liveNamespaceLabels(t *testing.T, objs []*unstructured.Unstructured) string {
	labels := map[string]map[string]string{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" {
			continue
		}
		got, err := kc.client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		require.NoError(t, err)
		labels[ns] = got.Labels
	}
	data, err := yaml.Marshal(labels)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "namespace-labels.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}
