//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// gatorSuite is the part of a gator suite this test reads.
type gatorSuite struct {
	Tests []struct {
		Template   string `json:"template"`
		Constraint string `json:"constraint"`
		Cases      []struct {
			Name   string `json:"name"`
			Object string `json:"object"`
		} `json:"cases"`
	} `json:"tests"`
}

// TestGatekeeperTemplatesAsVAPs compiles every Gatekeeper suite's template
// and constraint with --backend vap, applies the VAP and binding to the API
// server (with a CRD for the constraint kind and the constraint itself, the
// binding's parameter object, as Gatekeeper would serve them), and checks
// that every case object is decided as `admitc test` decides it on the
// template and constraint (AdmissionReview cases, which are UPDATEs, are
// left to the unit tests).
func TestGatekeeperTemplatesAsVAPs(t *testing.T) {
	suites, err := filepath.Glob(repo + "examples/gatekeeper/*/suite.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, suites)
	// Every constraint CRD is created first: the API server's policy plugin
	// resolves a new paramKind only when its discovery is next refreshed
	// (tens of seconds), so one wait covers every suite.
	parsed := map[string]gatorSuite{}
	for _, suiteFile := range suites {
		data, err := os.ReadFile(suiteFile)
		require.NoError(t, err)
		var s gatorSuite
		require.NoError(t, yaml.Unmarshal(data, &s))
		parsed[suiteFile] = s
		dir := strings.TrimPrefix(filepath.Dir(suiteFile), repo) + "/"
		for _, test := range s.Tests {
			kind := decode(t, test.Constraint, mustRead(t, dir+test.Constraint))[0].GetKind()
			crd := constraintCRD(t, kind)
			t.Cleanup(func() { deleteCRD(t, crd) })
		}
	}
	for _, suiteFile := range suites {
		dir := strings.TrimPrefix(filepath.Dir(suiteFile), repo) + "/"
		t.Run(filepath.Base(dir), func(t *testing.T) {
			for _, test := range parsed[suiteFile].Tests {
				runGatekeeperTest(t, dir, test.Template, test.Constraint, caseObjects(t, dir, test.Cases))
			}
		})
	}
}

func caseObjects(t *testing.T, dir string, cases []struct {
	Name   string `json:"name"`
	Object string `json:"object"`
}) []string {
	var out []string
	for _, c := range cases {
		data, err := os.ReadFile(repo + dir + c.Object)
		require.NoError(t, err)
		if !strings.Contains(string(data), "kind: AdmissionReview") {
			out = append(out, dir+c.Object)
		}
	}
	return out
}

func runGatekeeperTest(t *testing.T, dir, template, constraint string, objects []string) {
	policies := []string{"--policies", dir + template, "--policies", dir + constraint}
	vaps, stderr, code := admitc(t, append([]string{"compile", "--backend", "vap"}, policies...)...)
	require.Equal(t, 0, code, stderr)
	constraints := decode(t, constraint, mustRead(t, dir+constraint))
	defer deleteVAPs(t, vaps)
	for _, c := range constraints {
		createIgnoringExisting(t, c)
	}
	apply(t, vaps, false)
	for _, file := range objects {
		obj := decode(t, file, mustRead(t, file))[0]
		ns := obj.GetNamespace()
		if ns == "" && !clusterScoped(obj.GetKind()) {
			ns = "default"
		}
		ensureNamespace(t, ns)
		w := admitcTestIn(t, ns, policies, file)[obj.GetName()]
		assert.Empty(t, agreeOnAPIServer(t, file, obj, ns, w), "%s", file)
	}
}

// agreeOnAPIServer dry-run creates obj in ns until the API server decides
// as admitc test did (w) or settleTimeout passes, and returns the differences left.
// A policy whose paramKind the API server does not resolve yet is waited
// for (up to 90 s); an object the API server refuses outside admission is
// logged and not compared.
func agreeOnAPIServer(t *testing.T, file string, obj *unstructured.Unstructured, ns string, w offline) []string {
	t.Helper()
	var problems []string
	deadline := time.Now().Add(settleTimeout)
	configured := time.Now().Add(90 * time.Second)
	for {
		got := gkDryRunCreate(t, obj, ns)
		if got.err != nil && strings.Contains(got.err.Error(), "failed to configure policy") && time.Now().Before(configured) {
			// The API server resolves the new constraint CRD (the
			// paramKind) some seconds after it is created.
			deadline = time.Now().Add(settleTimeout)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if got.err != nil && !strings.Contains(got.err.Error(), "with binding '") &&
			(apierrors.IsInvalid(got.err) || apierrors.IsAlreadyExists(got.err)) {
			// Refused by the API server's own checks: an invalid object
			// never reaches validating admission (validation runs first),
			// and "already exists" is decided after it.
			t.Logf("%s: not compared, the API server refused it outside admission: %v", file, got.err)
			problems = nil
			break
		}
		if problems = disagreements(w, obj, got); len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	return problems
}

func admitcTestIn(t *testing.T, ns string, policies []string, file string) map[string]offline {
	args := append(append([]string{"test", "-o", "json"}, policies...), file)
	if ns != "" {
		args = append(args, "--namespace", ns)
	}
	out, stderr, code := admitc(t, args...)
	require.Contains(t, []int{0, 1}, code, stderr)
	return parseOffline(t, out)
}

func gkDryRunCreate(t *testing.T, obj *unstructured.Unstructured, ns string) answer {
	if ns == "" {
		obj = obj.DeepCopy()
		ri, err := resourceFor(obj)
		require.NoError(t, err)
		kc.warnings.take()
		out, err := ri.Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return answer{obj: out, err: err, warnings: kc.warnings.take()}
	}
	return dryRunCreate(t, obj, ns)
}

func mustRead(t *testing.T, file string) []byte {
	if !filepath.IsAbs(file) {
		file = repo + file
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return data
}

// ensureNamespace makes namespace ns and its default service account exist
// (there is no controller-manager to create them), looking before creating
// so that a policy on Namespaces is not asked about one that exists.
func ensureNamespace(t *testing.T, ns string) {
	if ns == "" {
		return
	}
	ctx := context.Background()
	if _, err := kc.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = kc.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	if _, err := kc.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = kc.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// ensurePodServiceAccount makes the ServiceAccount a Pod names exist: the
// API server's ServiceAccount admission plugin refuses a Pod whose account
// is missing, before any policy is asked.
func ensurePodServiceAccount(t *testing.T, o *unstructured.Unstructured) {
	name, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccountName")
	if o.GetKind() != "Pod" || name == "" || o.GetNamespace() == "" {
		return
	}
	ctx := context.Background()
	if _, err := kc.client.CoreV1().ServiceAccounts(o.GetNamespace()).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = kc.client.CoreV1().ServiceAccounts(o.GetNamespace()).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

func createIgnoringExisting(t *testing.T, u *unstructured.Unstructured) {
	var err error
	for i := 0; i < 50; i++ { // the CRD's resource appears in discovery shortly after it is established
		var ri interface {
			Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
		}
		gvr := schema.GroupVersionResource{Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: strings.ToLower(u.GetKind())}
		ri = kc.dynamic.Resource(gvr)
		if _, err = ri.Create(context.Background(), u, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, err)
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// constraintCRD creates the CRD Gatekeeper serves for a constraint kind:
// cluster-scoped, constraints.gatekeeper.sh/v1beta1, any spec.
func constraintCRD(t *testing.T, kind string) string {
	plural := strings.ToLower(kind)
	name := plural + ".constraints.gatekeeper.sh"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": "constraints.gatekeeper.sh", "scope": "Cluster",
			"names": map[string]any{"kind": kind, "plural": plural, "listKind": kind + "List", "singular": plural},
			"versions": []any{map[string]any{"name": "v1beta1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	_, err := kc.dynamic.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	return name
}

func deleteVAPs(t *testing.T, vaps string) {
	ctx := context.Background()
	for _, u := range decode(t, "vaps", []byte(vaps)) {
		ri, err := resourceFor(u)
		require.NoError(t, err)
		if err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
}

func deleteCRD(t *testing.T, crd string) {
	if err := kc.dynamic.Resource(crdGVR).Delete(context.Background(), crd, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

func parseOffline(t *testing.T, out string) map[string]offline {
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
