//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestMigratedPoliciesOnTheAPIServer runs `admitc migrate` on every Kyverno
// fixture, then (1) creates Kyverno's policies.kyverno.io CRDs (v1.19.1, from
// the module cache) and dry-run creates every successor policy: the API
// server accepts them against Kyverno's schemas; (2) applies every emitted
// VAP/MAP and checks that each resource of the fixture's test is decided as
// `admitc test` decides it on the original policy.
func TestMigratedPoliciesOnTheAPIServer(t *testing.T) {
	installKyvernoCRDs(t, "policies.kyverno.io")
	successors, checked := 0, 0
	// The two fixture sets hold policies of the same names (a validate.cel
	// and a pattern flavour), so each is migrated on its own.
	for _, fixtures := range []string{"examples/kyverno", "examples/kyverno-pattern"} {
		s, c := checkMigrated(t, fixtures, fixtures == "examples/kyverno-pattern")
		successors, checked = successors+s, checked+c
	}
	require.Positive(t, successors)
	t.Logf("%d successor policies accepted, %d resources checked on the migrated VAPs/MAPs", successors, checked)
}

// checkMigrated migrates one fixture set; with decisionsElsewhere the
// emitted VAPs/MAPs are only dry-run created, not judged.
func checkMigrated(t *testing.T, fixtures string, decisionsElsewhere bool) (successors, checked int) {
	out := t.TempDir()
	stdout, stderr, code := admitc(t, "migrate", fixtures, "--out", out)
	require.Contains(t, []int{0, 1}, code, "%s%s", stdout, stderr)
	originals := originalPolicies(t, fixtures)
	dirs, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(out, d.Name())
		t.Run(filepath.Base(fixtures)+"/"+d.Name(), func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, "*policy.yaml"))
			require.NoError(t, err)
			for _, f := range files {
				for _, u := range decode(t, f, mustRead(t, f)) {
					ri, err := resourceFor(u)
					require.NoError(t, err)
					if u.GetNamespace() != "" {
						ensureNamespace(t, u.GetNamespace())
					}
					_, err = ri.Create(context.Background(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					assert.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
					successors++
				}
			}
			var stream []string
			for _, name := range []string{"vap.yaml", "map.yaml"} {
				if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					stream = append(stream, string(data))
				}
			}
			original, ok := originals[d.Name()]
			require.True(t, ok, "no fixture policy named %s", d.Name())
			resources := filepath.Join(dir, ".kyverno-test", "resources.yaml")
			if _, err := os.Stat(resources); err != nil || len(stream) == 0 {
				return
			}
			if decisionsElsewhere {
				// The VAPs equal compile's, whose decisions
				// TestKyvernoPoliciesAsVAPs checks: here, only that the
				// API server takes them.
				apply(t, strings.Join(stream, "\n---\n"), true)
				return
			}
			b, _ := decideAsAdmitcTest(t, strings.Join(stream, "\n---\n"), original, resources)
			checked += b.compared
		})
	}
	return successors, checked
}

// originalPolicies maps migrate's output directory names (NAME, or
// NAMESPACE.NAME for a namespaced Policy) to the fixture policy files.
func originalPolicies(t *testing.T, fixtures string) map[string]string {
	files, err := filepath.Glob(repo + fixtures + "/*/policy.yaml")
	require.NoError(t, err)
	out := map[string]string{}
	for _, abs := range files {
		rel := strings.TrimPrefix(abs, repo)
		for _, u := range decode(t, rel, mustRead(t, rel)) {
			name := u.GetName()
			if u.GetNamespace() != "" {
				name = u.GetNamespace() + "." + name
			}
			out[name] = rel
		}
	}
	return out
}

// installKyvernoCRDs creates Kyverno's CRDs of the given config/crds
// folders (policies.kyverno.io, kyverno) from the module cache (the version
// go.mod names), waits until each kind is served, and removes them at the
// end.
func installKyvernoCRDs(t *testing.T, folders ...string) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kyverno/kyverno")
	cmd.Dir = repo
	dirOut, err := cmd.Output()
	require.NoError(t, err)
	var served []schema.GroupVersionResource
	for _, folder := range folders {
		crds, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(dirOut)), "config", "crds", folder, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, crds)
		for _, f := range crds {
			for _, u := range decode(t, f, mustRead(t, f)) {
				_, err := kc.dynamic.Resource(crdGVR).Create(context.Background(), u, metav1.CreateOptions{})
				if !apierrors.IsAlreadyExists(err) {
					require.NoError(t, err, f)
				}
				name := u.GetName()
				t.Cleanup(func() { deleteCRD(t, name) })
				group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
				plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
				versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
				for _, v := range versions {
					if ok, _, _ := unstructured.NestedBool(v.(map[string]any), "served"); ok {
						version, _, _ := unstructured.NestedString(v.(map[string]any), "name")
						served = append(served, schema.GroupVersionResource{Group: group, Version: version, Resource: plural})
						break
					}
				}
			}
		}
	}
	// Served once discovery has them: wait for each kind's list to answer.
	for _, gvr := range served {
		eventually(t, gvr.Resource+" to be served", func() bool {
			_, err := kc.dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
			return err == nil
		})
	}
}
