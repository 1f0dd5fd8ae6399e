//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const admissionDir = "examples/admission/"

var importedFixtures = []string{"deployment-5.yaml", "deployment-20.yaml", "deployment-canary.yaml", "deployment-legacy.yaml"}

// importedNamespaces are created with these labels; admitc test reads the
// same labels from a --namespace-labels file.
var importedNamespaces = map[string]map[string]string{
	"imported-prod":    {"env": "prod"},
	"imported-staging": {"env": "staging"},
}

// TestImportedVAPDecidesAsAdmitcTest applies a hand-written
// ValidatingAdmissionPolicy with three bindings (namespaceSelector,
// objectSelector, paramRef by name and by selector, parameterNotFoundAction
// Deny and Allow) to the API server, first as written, then as admitc emits
// it after reading it, and checks that every fixture in every namespace is
// decided as `admitc test` decides it, message included.
func TestImportedVAPDecidesAsAdmitcTest(t *testing.T) {
	labels := importedSetup(t)
	raw, err := os.ReadFile(repo + admissionDir + "vap-and-binding.yaml")
	require.NoError(t, err)
	emitted, stderr, code := admitc(t, "compile", "--policies", admissionDir+"vap-and-binding.yaml", "--backend", "vap")
	require.Equal(t, 0, code, stderr)
	for name, stream := range map[string]string{"as written": string(raw), "as admitc emits it": emitted} {
		t.Run(name, func(t *testing.T) {
			apply(t, stream, false)
			defer deleteImported(t)
			big := manifest(t, admissionDir+"deployment-20.yaml")
			eventually(t, "the imported policy to take effect", func() bool { return !dryRunCreate(t, big, "imported-prod").allowed() })
			for ns := range importedNamespaces {
				want := importedOffline(t, labels, ns)
				for _, file := range importedFixtures {
					obj := manifest(t, admissionDir+file)
					w := want[obj.GetName()]
					var problems []string
					deadline := time.Now().Add(settleTimeout)
					for {
						got := dryRunCreate(t, obj, ns)
						if problems = disagreements(w, obj, got); len(problems) == 0 || time.Now().After(deadline) {
							break
						}
						time.Sleep(200 * time.Millisecond)
					}
					assert.Empty(t, problems, "%s in %s", file, ns)
				}
			}
		})
	}
}

// importedSetup creates the labelled namespaces and the parameter
// ConfigMaps, and writes the --namespace-labels file.
func importedSetup(t *testing.T) string {
	ctx := context.Background()
	for ns, l := range importedNamespaces {
		_, err := kc.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	params, err := os.ReadFile(repo + admissionDir + "params.yaml")
	require.NoError(t, err)
	for _, u := range decode(t, "params", params) {
		ri, err := resourceFor(u)
		require.NoError(t, err)
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	data, err := json.Marshal(importedNamespaces)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "namespace-labels.json")
	require.NoError(t, os.WriteFile(file, data, 0o644))
	return file
}

func importedOffline(t *testing.T, labels, ns string) map[string]offline {
	args := []string{"test", "-o", "json", "--namespace", ns, "--namespace-labels", labels, "--params", admissionDir + "params.yaml", "--policies", admissionDir + "vap-and-binding.yaml"}
	for _, f := range importedFixtures {
		args = append(args, admissionDir+f)
	}
	out, stderr, code := admitc(t, args...)
	require.Contains(t, []int{0, 1}, code, stderr)
	return parseOffline(t, out)
}

// deleteImported removes the imported policy and its bindings, written
// with or without admitc's label.
func deleteImported(t *testing.T) {
	ctx := context.Background()
	for _, b := range []string{"replica-limit-prod", "replica-limit-dev", "replica-limit-canary"} {
		err := kc.dynamic.Resource(admissionGVR("validatingadmissionpolicybindings")).Delete(ctx, b, metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
	err := kc.dynamic.Resource(admissionGVR("validatingadmissionpolicies")).Delete(ctx, "replica-limit", metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	eventually(t, "the imported policy to go", func() bool {
		return dryRunCreate(t, manifest(t, admissionDir+"deployment-20.yaml"), "imported-prod").allowed()
	})
}
