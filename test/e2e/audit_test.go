//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

const auditDir = "test/e2e/testdata/audit/"

// auditPolicies are the policies the audit tests audit with: VAPs with
// bindings, and a Kyverno ClusterPolicy (two rules, and their autogen
// rules for pod controllers).
var auditPolicies = []string{auditDir + "policies.yaml", "examples/kyverno-pattern/disallow-latest-tag/policy.yaml"}

var (
	reportsGVR        = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}
	clusterReportsGVR = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "clusterreports"}
)

// auditDoc is admitc audit's JSON output.
type auditDoc struct {
	Objects []struct {
		Resource, Kind, Namespace, Name string
		Denied                          bool
		Results                         []struct {
			Policy, Binding, Operation, Status, Message string
			Denied                                      bool
		}
	} `json:"objects"`
	Coverage struct {
		Complete  bool
		Resources []struct {
			Resource       string
			Listed, Judged int
			Complete       bool
			Forbidden      bool
			Error          string
		}
	} `json:"coverage"`
	Summary struct{ Judged, Selected, Failed, Denied int } `json:"summary"`
}

// runAudit runs admitc audit -o json with args and decodes its output.
func runAudit(t *testing.T, wantCode int, args ...string) auditDoc {
	t.Helper()
	out, stderr, code := admitc(t, append([]string{"audit", "-o", "json"}, args...)...)
	require.Equal(t, wantCode, code, stderr)
	var doc auditDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

func policyArgs(policies ...string) []string {
	var out []string
	for _, p := range policies {
		out = append(out, "-p", p)
	}
	return out
}

// TestAudit stores objects, then installs policies that refuse some of
// them, emitted as ValidatingAdmissionPolicies, and audits the cluster.
func TestAudit(t *testing.T) {
	stored := auditSetup(t)
	kubeconfig := writeKubeconfig(t)
	t.Run("AgreesWithTheAPIServer", func(t *testing.T) { auditAgreesWithTheAPIServer(t, kubeconfig, stored) })
	t.Run("ReportsLoadIntoTheCluster", func(t *testing.T) { auditReportsLoad(t, kubeconfig) })
	t.Run("ForbiddenListIsReportedPerResource", func(t *testing.T) { auditForbiddenList(t, kubeconfig) })
	t.Run("ServeKeepsReportsCurrent", func(t *testing.T) { auditFromServe(t) })
}

// auditSetup creates the objects of objects.yaml (before any policy, so
// the cluster stores what the policies refuse), then emits the policies as
// VAPs and applies them; it returns the objects.
func auditSetup(t *testing.T) []*unstructured.Unstructured {
	ctx := context.Background()
	data, err := os.ReadFile(repo + auditDir + "objects.yaml")
	require.NoError(t, err)
	objs := decode(t, "objects.yaml", data)
	for _, u := range objs {
		ri := auditResource(u)
		_, err := ri.Create(ctx, u, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
		}
		if u.GetKind() == "Namespace" {
			_, err := kc.client.CoreV1().ServiceAccounts(u.GetName()).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
	}
	emitted, stderr, code := admitc(t, append([]string{"compile", "--backend", "vap"}, policyArgs(auditPolicies...)...)...)
	require.Equal(t, 0, code, stderr)
	deleteManaged(t)
	apply(t, emitted, false)
	t.Cleanup(func() { deleteManaged(t) })
	var priv *unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "Pod" && u.GetNamespace() == "audit-prod" && u.GetName() == "privileged" {
			priv = u
		}
	}
	require.NotNil(t, priv)
	eventually(t, "the audit policies to take effect", func() bool {
		return !dryRunCreate(t, auditCopy(priv, "probe"), "audit-prod").allowed()
	})
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() != "ConfigMap" {
			out = append(out, u)
		}
	}
	return out
}

// auditResource is the client of u's resource, in its namespace.
func auditResource(u *unstructured.Unstructured) dynamic.ResourceInterface {
	gvr := map[string]schema.GroupVersionResource{
		"Namespace": {Version: "v1", Resource: "namespaces"}, "ConfigMap": {Version: "v1", Resource: "configmaps"},
		"Pod": {Version: "v1", Resource: "pods"}, "Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
		"ClusterRole": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	}[u.GetKind()]
	if u.GetNamespace() == "" {
		return kc.dynamic.Resource(gvr)
	}
	return kc.dynamic.Resource(gvr).Namespace(u.GetNamespace())
}

// auditCopy is u renamed, without what the API server set when storing it.
func auditCopy(u *unstructured.Unstructured, name string) *unstructured.Unstructured {
	c := u.DeepCopy()
	c.SetName(name)
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c
}

// apiVerdict is what the API server answers when the stored object is
// submitted again: a dry-run create (a denial, or AlreadyExists once
// admission passed) and, with update, a dry-run update of the object onto
// itself.
func apiVerdict(t *testing.T, u *unstructured.Unstructured, update bool) (createErr, updateErr error) {
	ctx := context.Background()
	ri := auditResource(u)
	stored, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	_, createErr = ri.Create(ctx, auditCopy(stored, stored.GetName()), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.Error(t, createErr, "a dry-run create of the stored %s %s succeeded", u.GetKind(), u.GetName())
	if apierrors.IsAlreadyExists(createErr) {
		createErr = nil
	}
	if update {
		_, updateErr = ri.Update(ctx, stored, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	return createErr, updateErr
}

// auditAgreesWithTheAPIServer: for every stored object, the audit's
// verdict (as a CREATE; as an UPDATE for the policies that match only
// UPDATE) is what the API server answers to a dry-run create (update) of
// it, and a denial's message is the API server's.
func auditAgreesWithTheAPIServer(t *testing.T, kubeconfig string, stored []*unstructured.Unstructured) {
	doc := runAudit(t, 1, append([]string{"--kubeconfig", kubeconfig}, policyArgs(auditPolicies...)...)...)
	assert.True(t, doc.Coverage.Complete)
	byObject := map[string]int{}
	for i, o := range doc.Objects {
		byObject[o.Kind+"/"+o.Namespace+"/"+o.Name] = i
	}
	checked, denied, updates := 0, 0, 0
	for _, u := range stored {
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		var createDenied, updateDenied bool
		var createMsgs, updatePolicies []string
		if i, ok := byObject[key]; ok {
			for _, r := range doc.Objects[i].Results {
				switch {
				case r.Operation == "UPDATE":
					updatePolicies = append(updatePolicies, r.Policy)
					updateDenied = updateDenied || r.Denied
				case r.Denied:
					createDenied = true
					createMsgs = append(createMsgs, r.Message)
				}
			}
		}
		createErr, updateErr := apiVerdict(t, u, len(updatePolicies) > 0)
		if createErr != nil {
			denied++
		}
		if len(updatePolicies) > 0 {
			updates++
		}
		assert.Equal(t, createDenied, createErr != nil, "%s: audit says denied=%v on create, the API server: %v", key, createDenied, createErr)
		if createErr != nil && createDenied {
			assert.True(t, containsAny(createErr.Error(), createMsgs), "%s: the API server's denial %q has none of the audit's messages %q", key, createErr, createMsgs)
		}
		if len(updatePolicies) > 0 {
			apiDenied := updateErr != nil && containsAny(updateErr.Error(), quoted(updatePolicies))
			assert.Equal(t, updateDenied, apiDenied, "%s: audit says denied=%v on update, the API server: %v", key, updateDenied, updateErr)
		}
		checked++
	}
	assert.Equal(t, len(stored), checked)
	t.Logf("%d stored objects: the API server denied %d dry-run creates, as the audit said; %d dry-run updates compared", checked, denied, updates)
	assert.GreaterOrEqual(t, denied, 5, "the fixture stores objects the policies refuse")
	assertResult(t, doc, "Pod/audit-dev/privileged", "audit-no-privileged", "fail", false)
	assertResult(t, doc, "Pod/audit-dev/locked", "audit-locked", "fail", true)
	assertResult(t, doc, "Pod/audit-prod/web", "audit-admins-only", "skip", false)
	assertResult(t, doc, "Pod/audit-prod/latest", "disallow-latest-tag.validate-image-tag", "fail", true)
	assertResult(t, doc, "Namespace//audit-dev", "audit-namespace-owner", "fail", true)

	asDeny := runAudit(t, 1, append([]string{"--kubeconfig", kubeconfig, "--as-deny"}, policyArgs(auditPolicies...)...)...)
	assert.Greater(t, asDeny.Summary.Denied, doc.Summary.Denied, "--as-deny: the Warn binding's failure denies too")
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// quoted names policies as the API server's denials do.
func quoted(policies []string) []string {
	out := make([]string, len(policies))
	for i, p := range policies {
		out[i] = "ValidatingAdmissionPolicy '" + p + "'"
	}
	return out
}

// assertResult checks one policy's result on one object.
func assertResult(t *testing.T, doc auditDoc, key, policy, status string, denied bool) {
	t.Helper()
	for _, o := range doc.Objects {
		if o.Kind+"/"+o.Namespace+"/"+o.Name != key {
			continue
		}
		for _, r := range o.Results {
			if r.Policy == policy {
				assert.Equal(t, status, r.Status, "%s %s: %s", key, policy, r.Message)
				assert.Equal(t, denied, r.Denied, "%s %s", key, policy)
				return
			}
		}
	}
	t.Errorf("no result of %s on %s", policy, key)
}

// installReportCRDs applies the openreports.io CRDs and waits until they
// are served.
func installReportCRDs(t *testing.T) {
	for _, f := range []string{"openreports.io_reports.yaml", "openreports.io_clusterreports.yaml"} {
		data, err := os.ReadFile(filepath.Join(repo, "test/e2e/testdata/openreports", f))
		require.NoError(t, err)
		for _, u := range decode(t, f, data) {
			_, err := kc.dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
				Create(context.Background(), u, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
	}
	eventually(t, "the openreports.io CRDs to be served", func() bool {
		list, err := kc.client.Discovery().ServerResourcesForGroupVersion("openreports.io/v1alpha1")
		return err == nil && len(list.APIResources) >= 2
	})
}

// deleteReports removes admitc's Reports and ClusterReport.
func deleteReports(t *testing.T) {
	ctx := context.Background()
	list, err := kc.dynamic.Resource(reportsGVR).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=admitc"})
	require.NoError(t, err)
	for _, r := range list.Items {
		require.NoError(t, kc.dynamic.Resource(reportsGVR).Namespace(r.GetNamespace()).Delete(ctx, r.GetName(), metav1.DeleteOptions{}))
	}
	err = kc.dynamic.Resource(clusterReportsGVR).Delete(ctx, "admitc-audit", metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

// summaries counts the audit's results by namespace ("" for cluster-scoped
// objects) and status, as the Reports' summaries must.
func summaries(doc auditDoc) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, o := range doc.Objects {
		if out[o.Namespace] == nil {
			out[o.Namespace] = map[string]int64{"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}
		}
		for _, r := range o.Results {
			out[o.Namespace][r.Status]++
		}
	}
	return out
}

// reportSummary is the summary of a Report in the cluster.
func reportSummary(t *testing.T, ri dynamic.ResourceInterface) (map[string]int64, bool) {
	r, err := ri.Get(context.Background(), "admitc-audit", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	s, _, _ := unstructured.NestedMap(r.Object, "summary")
	out := map[string]int64{}
	for k, v := range s {
		out[k] = v.(int64)
	}
	return out, true
}

// auditReportsLoad: --apply writes one Report per namespace and a
// ClusterReport, accepted by the openreports.io CRDs, with the audit's
// counts; a second run with the same results writes nothing; --out holds
// the same Reports as files.
func auditReportsLoad(t *testing.T, kubeconfig string) {
	installReportCRDs(t)
	deleteReports(t)
	t.Cleanup(func() { deleteReports(t) })
	doc := runAudit(t, 1, append([]string{"--kubeconfig", kubeconfig}, policyArgs(auditPolicies...)...)...)
	dir := t.TempDir()
	out, stderr, code := admitc(t, append([]string{"audit", "--kubeconfig", kubeconfig, "-o", "openreports", "--out", dir, "--apply"}, policyArgs(auditPolicies...)...)...)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "reports: ")
	printed := decode(t, "reports", []byte(out))
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	assert.Len(t, files, len(printed))
	want := summaries(doc)
	for _, ns := range []string{"audit-prod", "audit-dev"} {
		got, ok := reportSummary(t, kc.dynamic.Resource(reportsGVR).Namespace(ns))
		require.True(t, ok, "no Report in %s", ns)
		assert.Equal(t, want[ns], got, ns)
		assert.FileExists(t, filepath.Join(dir, "report-"+ns+".yaml"))
	}
	got, ok := reportSummary(t, kc.dynamic.Resource(clusterReportsGVR))
	require.True(t, ok, "no ClusterReport")
	assert.Equal(t, want[""], got)

	_, stderr, code = admitc(t, append([]string{"audit", "--kubeconfig", kubeconfig, "--apply"}, policyArgs(auditPolicies...)...)...)
	require.Equal(t, 1, code, stderr)
	assert.Regexp(t, `reports: 0 applied, \d+ unchanged, 0 deleted`, stderr)
}

// auditForbiddenList: credentials that may list pods and not deployments
// or cluster roles audit the pods, report the other resources as not
// listed, and exit 1.
func auditForbiddenList(t *testing.T, admin string) {
	ctx := context.Background()
	const name = "audit-limited"
	_, err := kc.client.CoreV1().ServiceAccounts("audit-params").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
	}}
	_, err = kc.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "audit-params"}}}
	_, err = kc.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	token, err := kc.client.CoreV1().ServiceAccounts("audit-params").CreateToken(ctx, name, serviceAccountTokenRequest(), metav1.CreateOptions{})
	require.NoError(t, err)
	limited := runAudit(t, 1, append([]string{"--kubeconfig", writeTokenKubeconfig(t, kc.server, token.Status.Token)}, policyArgs(auditPolicies...)...)...)
	full := runAudit(t, 1, append([]string{"--kubeconfig", admin}, policyArgs(auditPolicies...)...)...)
	assert.False(t, limited.Coverage.Complete)
	for _, r := range limited.Coverage.Resources {
		switch r.Resource {
		case "pods", "namespaces":
			assert.True(t, r.Complete, r.Resource)
		case "deployments.apps", "clusterroles.rbac.authorization.k8s.io":
			assert.True(t, r.Forbidden, "%s: %s", r.Resource, r.Error)
		}
	}
	pods := func(doc auditDoc) []string {
		var out []string
		for _, o := range doc.Objects {
			if o.Kind == "Pod" {
				out = append(out, fmt.Sprintf("%s/%s %v", o.Namespace, o.Name, o.Denied))
			}
		}
		return out
	}
	assert.Equal(t, pods(full), pods(limited))
}

func serviceAccountTokenRequest() *authenticationv1.TokenRequest {
	expiry := int64(3600)
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
}

// auditFromServe: admitc serve --audit-interval, with the service account
// and the ClusterRole the webhook backend emits with --audit-interval, and
// nothing else, writes the Reports the CLI writes, and keeps them current:
// a deleted pod leaves its namespace's Report at the next interval.
func auditFromServe(t *testing.T) {
	installReportCRDs(t)
	deleteReports(t)
	t.Cleanup(func() { deleteReports(t) })
	policies := auditDir + "policies.yaml"
	const name = "audit-webhook"
	docs := auditRBAC(t, policies, name)
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		if docs[kind] != "" {
			apply(t, docs[kind], false)
		}
	}
	kubeconfig := writeTokenKubeconfig(t, kc.server, serviceAccountToken(t, name))
	want := summaries(runAudit(t, 1, "--kubeconfig", writeKubeconfig(t), "-p", policies))
	logs := startAuditingServe(t, policies, kubeconfig)
	prod := kc.dynamic.Resource(reportsGVR).Namespace("audit-prod")
	// serve writes one Report at a time: wait for the ClusterReport too,
	// not only for the first Report it wrote.
	eventually30(t, "admitc serve to write the Report of audit-prod and the ClusterReport", func() bool {
		got, ok := reportSummary(t, prod)
		cluster, cok := reportSummary(t, kc.dynamic.Resource(clusterReportsGVR))
		return ok && (cok || want[""] == nil) && assert.ObjectsAreEqual(want["audit-prod"], got) && assert.ObjectsAreEqual(want[""], cluster)
	}, logs)
	assert.NotContains(t, readLog(t, logs), "could not list", "the emitted ClusterRole lists everything the audit lists")

	require.NoError(t, kc.client.CoreV1().Pods("audit-prod").Delete(context.Background(), "privileged", metav1.DeleteOptions{}))
	eventually30(t, "the Report of audit-prod to lose the deleted pod's failure", func() bool {
		got, ok := reportSummary(t, prod)
		return ok && got["fail"] == want["audit-prod"]["fail"]-1
	}, logs)
}

// auditRBAC is the RBAC the webhook backend emits with --audit-interval,
// as YAML documents by kind.
func auditRBAC(t *testing.T, policies, name string) map[string]string {
	out, stderr, code := admitc(t, "compile", "--policies", policies, "--backend", "webhook", "--namespace", "audit-prod", "--name", name, "--audit-interval", "1s")
	require.Equal(t, 0, code, stderr)
	docs := map[string]string{}
	for _, u := range decode(t, "webhook.yaml", []byte(out)) {
		if u.GetKind() == "ClusterRole" {
			rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
			assert.Contains(t, fmt.Sprint(rules), "openreports.io", "the ClusterRole writes Reports")
		}
		data, err := json.Marshal(u.Object)
		require.NoError(t, err)
		docs[u.GetKind()] = string(data)
	}
	return docs
}

// startAuditingServe runs admitc serve --audit-interval 1s as its own
// process and returns its log file.
func startAuditingServe(t *testing.T, policies, kubeconfig string) string {
	bin := buildAdmitc(t)
	dir := t.TempDir()
	out, err := exec.Command(bin, "certs", "--out", dir, "--dns", "localhost", "--ip", "127.0.0.1").CombinedOutput()
	require.NoError(t, err, string(out))
	port, err := freePort()
	require.NoError(t, err)
	logFile := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logFile)
	require.NoError(t, err)
	cmd := exec.Command(bin, "serve", "--policies", repo+policies, "--kubeconfig", kubeconfig, "--audit-interval", "1s",
		"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"), "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--shutdown-delay", "0s")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return logFile
}

func readLog(t *testing.T, file string) string {
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return string(data)
}

// eventually30 polls cond for up to 30 s, printing the log on failure.
func eventually30(t *testing.T, what string, cond func() bool, logFile string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; log:\n%s", what, readLog(t, logFile))
}

// TestAuditBadInput: refused credentials and a kind the API server does
// not serve are bad input: exit 2, a clear error, nothing written.
func TestAuditBadInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports")
	bad := writeTokenKubeconfig(t, kc.server, "expired-or-revoked")
	_, stderr, code := admitc(t, "audit", "--kubeconfig", bad, "-p", auditDir+"policies.yaml", "--out", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "refused the credentials")
	widgets := filepath.Join(t.TempDir(), "widgets.yaml")
	require.NoError(t, os.WriteFile(widgets, []byte(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: widgets}
spec:
  rules:
  - name: size
    match: {any: [{resources: {kinds: [example.com/v1/Widget]}}]}
    validate: {failureAction: Enforce, message: too big, pattern: {spec: {size: "<10"}}}
`), 0o644))
	_, stderr, code = admitc(t, "audit", "--kubeconfig", writeKubeconfig(t), "-p", widgets, "--out", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "error: not served: policy \"widgets/size\" matches widgets.example.com (v1), which the API server does not serve")
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "nothing written: %v", err)
}
