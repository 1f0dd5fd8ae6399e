package openreports

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/openreports/reports-api/pkg/client/clientset/versioned/fake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/admitc/admitc/internal/audit"
	"github.com/admitc/admitc/ir"
)

// testPolicy is a translated Kyverno rule with severity and category.
var testPolicy = &audit.Policy{Operation: ir.Create, IR: &ir.Policy{Name: "disallow-privileged.privileged", From: &ir.PolicyRef{
	Kind: "ClusterPolicy", Name: "disallow-privileged", Rule: "privileged", Severity: "High", Category: "Pod Security Standards (Baseline)"}}}

func podResult(ns, name string, status audit.Status, message string) *audit.ObjectResult {
	r := audit.PolicyResult{Policy: testPolicy.IR.Name, Operation: ir.Create, Status: status, Message: message}
	if status == audit.Fail {
		r.Actions, r.Denied = []ir.Action{ir.Deny}, true
	}
	return &audit.ObjectResult{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, APIVersion: "v1", Kind: "Pod",
		Namespace: ns, Name: name, UID: types.UID("uid-" + name), Results: []audit.PolicyResult{r}}
}

func newBuilder(maxBytes int) *Builder {
	return NewBuilder([]*audit.Policy{testPolicy}, Options{MaxBytes: maxBytes, Time: time.Unix(1700000000, 5)})
}

// TestReportsPerNamespace: one Report per namespace, the cluster-scoped
// objects in the ClusterReport, each result with the policy's names,
// severity and category, the object and what it was judged as.
func TestReportsPerNamespace(t *testing.T) {
	b := newBuilder(0)
	require.NoError(t, b.Object(podResult("shop", "web", audit.Pass, "")))
	require.NoError(t, b.Object(podResult("shop", "priv", audit.Fail, "privileged")))
	require.NoError(t, b.Object(podResult("dev", "web", audit.Pass, "")))
	ns := podResult("", "team-a", audit.Skip, "why")
	ns.Kind, ns.Resource.Resource = "Namespace", "namespaces"
	require.NoError(t, b.Object(ns))
	set, err := b.Reports()
	require.NoError(t, err)
	require.NotNil(t, set.Cluster)
	assert.Equal(t, v1alpha1.ReportSummary{Skip: 1}, set.Cluster.Summary)
	require.Len(t, set.Reports, 2)
	assert.Equal(t, []string{"dev", "shop"}, []string{set.Reports[0].Namespace, set.Reports[1].Namespace})
	shop := set.Reports[1]
	assert.Equal(t, DefaultName, shop.Name)
	assert.Equal(t, Source, shop.Source)
	assert.Equal(t, v1alpha1.ReportSummary{Pass: 1, Fail: 1}, shop.Summary)
	assert.Equal(t, v1alpha1.ReportResult{
		Source: Source, Policy: "disallow-privileged", Rule: "privileged", Category: "Pod Security Standards (Baseline)", Severity: "high",
		Timestamp: metav1.Timestamp{Seconds: 1700000000, Nanos: 5}, Result: "fail", Scored: true, Description: "privileged",
		Subjects:   []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "priv", UID: "uid-priv"}},
		Properties: map[string]string{"operation": "CREATE", "actions": "Deny", "denied": "true"},
	}, shop.Results[1])
	assert.Equal(t, "clusterreport.yaml", FileName(set.Objects()[0]))
	assert.Equal(t, "report-dev.yaml", FileName(set.Objects()[1]))
}

// TestReportStaysUnderItsCap: past the cap the least severe results give
// way, every result is still counted in the summary, and the Report says
// how many it does not list.
func TestReportStaysUnderItsCap(t *testing.T) {
	const maxBytes = 16 << 10
	b := newBuilder(maxBytes)
	for i := range 200 {
		status, msg := audit.Pass, ""
		if i%10 == 3 {
			status, msg = audit.Fail, strings.Repeat("m", 100)
		}
		require.NoError(t, b.Object(podResult("shop", fmt.Sprintf("web-%03d", i), status, msg)))
	}
	set, err := b.Reports()
	require.NoError(t, err)
	r := set.Reports[0]
	data, err := json.Marshal(r)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(data), maxBytes)
	assert.Equal(t, v1alpha1.ReportSummary{Pass: 180, Fail: 20}, r.Summary)
	fails := 0
	for _, res := range r.Results {
		if res.Result == "fail" {
			fails++
		}
	}
	assert.Equal(t, 20, fails, "every fail is listed before any pass")
	assert.Less(t, len(r.Results), 200)
	assert.Equal(t, fmt.Sprint(200-len(r.Results)), r.Annotations[NotListedAnnotation])
	assert.Equal(t, len(r.Results), r.Configuration.Limits.MaxResults)
	for i := 1; i < len(r.Results); i++ {
		assert.Less(t, r.Results[i-1].Subjects[0].Name, r.Results[i].Subjects[0].Name, "listing order")
	}
}

// TestDigestLeavesTimestampsOut: the same results at another time have the
// same digest, so --apply skips them; another result changes it.
func TestDigestLeavesTimestampsOut(t *testing.T) {
	digest := func(at time.Time, status audit.Status) string {
		b := NewBuilder([]*audit.Policy{testPolicy}, Options{Time: at})
		require.NoError(t, b.Object(podResult("shop", "web", status, "")))
		set, err := b.Reports()
		require.NoError(t, err)
		return set.Reports[0].Annotations[HashAnnotation]
	}
	now := time.Now()
	assert.Equal(t, digest(now, audit.Pass), digest(now.Add(time.Hour), audit.Pass))
	assert.NotEqual(t, digest(now, audit.Pass), digest(now, audit.Fail))
}

// TestApplySkipsUnchangedAndPrunes: a first apply writes every Report; the
// same results again write nothing; a namespace with no result left loses
// its Report, only when pruning.
func TestApplySkipsUnchangedAndPrunes(t *testing.T) {
	client := applyingClientset()
	applier := Applier{Client: client, Name: DefaultName}
	build := func(namespaces ...string) *Set {
		b := newBuilder(0)
		for _, ns := range namespaces {
			require.NoError(t, b.Object(podResult(ns, "web", audit.Pass, "")))
		}
		set, err := b.Reports()
		require.NoError(t, err)
		return set
	}
	ctx := context.Background()
	done, err := applier.Apply(ctx, build("dev", "shop"), true)
	require.NoError(t, err)
	assert.Equal(t, Applied{Applied: 2}, done)
	got, err := client.OpenreportsV1alpha1().Reports("shop").Get(ctx, DefaultName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, got.Summary.Pass)
	assert.Equal(t, ManagedBy, got.Labels[ManagedByLabel])

	done, err = applier.Apply(ctx, build("dev", "shop"), true)
	require.NoError(t, err)
	assert.Equal(t, Applied{Unchanged: 2}, done)

	done, err = applier.Apply(ctx, build("shop"), false)
	require.NoError(t, err)
	assert.Equal(t, Applied{Unchanged: 1}, done, "no pruning after an incomplete audit")
	done, err = applier.Apply(ctx, build("shop"), true)
	require.NoError(t, err)
	assert.Equal(t, Applied{Unchanged: 1, Deleted: 1}, done)
	list, err := client.OpenreportsV1alpha1().Reports("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
}

// TestServedNeedsTheCRDs: without the openreports.io CRDs, --apply is bad
// input.
func TestServedNeedsTheCRDs(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	err := Served(disc)
	assert.ErrorIs(t, err, audit.ErrNotServed)
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "openreports.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "reports"}, {Name: "clusterreports"}}}}
	assert.NoError(t, Served(disc))
}

// applyingClientset is a fake clientset whose server-side apply stores the
// applied object whole (the fake's own apply has no schema for these
// types; the e2e suite applies to a real API server).
func applyingClientset() *fake.Clientset {
	client := fake.NewSimpleClientset()
	client.PrependReactor("patch", "reports", func(action k8stesting.Action) (bool, k8sruntime.Object, error) {
		patch := action.(k8stesting.PatchAction)
		var r v1alpha1.Report
		if err := json.Unmarshal(patch.GetPatch(), &r); err != nil {
			return true, nil, err
		}
		gvr := v1alpha1.SchemeGroupVersion.WithResource("reports")
		if _, err := client.Tracker().Get(gvr, r.Namespace, r.Name); err != nil {
			return true, &r, client.Tracker().Create(gvr, &r, r.Namespace)
		}
		return true, &r, client.Tracker().Update(gvr, &r, r.Namespace)
	})
	return client
}
