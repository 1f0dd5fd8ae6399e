package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// auditRun audits three pods and two deployments (their LIST forbidden
// when forbid is set) with testPolicies into sinks.
func auditRun(t *testing.T, forbid bool, opts Options, sinks func(a *Auditor) Sinks) (*Auditor, *Coverage) {
	t.Helper()
	a, err := New(compile(t, testPolicies), opts)
	require.NoError(t, err)
	client, lister := fakeLister(t, pod(t, "dev", "priv-a", ""), pod(t, "prod", "priv-b", ""), pod(t, "prod", "web", ""),
		deployment(t, "prod", "big", 5), deployment(t, "prod", "small", 1))
	if forbid {
		client.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
			return true, nil, apierrors.NewForbidden(deploymentsGVR.GroupResource(), "", errors.New("no list"))
		})
	}
	cov, err := a.Run(context.Background(), Input{Targets: []Target{podsTarget, deployTarget}, Lister: lister, State: testState(t)}, sinks(a))
	require.NoError(t, err)
	cov.Elapsed = 2 * time.Second
	return a, cov
}

// TestTableCountsPerPolicy: per policy the counts and the first failures,
// the policies not audited, what each resource covered, the totals.
func TestTableCountsPerPolicy(t *testing.T) {
	var tally *Tally
	_, cov := auditRun(t, true, Options{}, func(a *Auditor) Sinks { tally = NewTally(a.Policies(), 1); return Sinks{tally} })
	var out bytes.Buffer
	require.NoError(t, WriteTable(&out, tally, cov, false))
	assert.Equal(t, `POLICY               PASS   FAIL  ERROR   SKIP DENIED
no-privileged           1      2      0      0      1
    fail Pod dev/priv-a (binding no-privileged-dev): no privileged containers [Warn, Audit]
    ... and 1 more
replica-limit           0      0      0      0      0
admins-only             0      0      0      3      0
    skip: it reads request.userInfo (policies.yaml:56:17), the user who sends the request, which a stored object does not have
locked (as UPDATE)      3      0      0      0      0
not audited: keep-pods: it matches only DELETE, never a create or an update of a stored object
pods: 3 object(s)
deployments.apps: not listed in full (0 listed, 0 judged): deployments.apps is forbidden: no list
3 object(s) judged in 2s (2/s), 3 selected by a policy: 2 failed, 1 would be denied
`, out.String())
}

// TestJSONIsOneDocument: the objects with their results, per-policy
// counts, coverage and totals, decoded back.
func TestJSONIsOneDocument(t *testing.T) {
	var buf bytes.Buffer
	var tally *Tally
	var w *JSONWriter
	_, cov := auditRun(t, false, Options{AsDeny: true}, func(a *Auditor) Sinks {
		tally, w = NewTally(a.Policies(), 5), NewJSONWriter(&buf, true)
		return Sinks{tally, w}
	})
	require.NoError(t, w.Close(tally, cov))
	var doc struct {
		APIVersion string `json:"apiVersion"`
		AsDeny     bool   `json:"asDeny"`
		Objects    []struct {
			Resource, Kind, Namespace, Name string
			Denied                          bool
			Results                         []PolicyResult
		} `json:"objects"`
		Policies []jsonPolicy `json:"policies"`
		Coverage struct {
			Complete  bool
			Resources []struct{ Resource string }
		} `json:"coverage"`
		Summary struct{ Judged, Selected, Failed, Denied int } `json:"summary"`
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc), buf.String())
	assert.Equal(t, JSONVersion, doc.APIVersion)
	assert.True(t, doc.AsDeny)
	require.Len(t, doc.Objects, 5)
	assert.Equal(t, "deployments.apps", doc.Objects[3].Resource)
	assert.Equal(t, "fail", string(doc.Objects[3].Results[0].Status))
	assert.True(t, doc.Objects[0].Denied, "as-deny: the dev binding's failure denies")
	assert.Len(t, doc.Policies, 5)
	assert.True(t, doc.Coverage.Complete)
	assert.Equal(t, struct{ Judged, Selected, Failed, Denied int }{5, 5, 3, 3}, doc.Summary)
}

// TestJSONWithNoObject is still one document.
func TestJSONWithNoObject(t *testing.T) {
	var buf bytes.Buffer
	w := NewJSONWriter(&buf, false)
	require.NoError(t, w.Close(NewTally(nil, 0), &Coverage{}))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc), buf.String())
	assert.Equal(t, []any{}, doc["objects"])
}

// TestJUnitSuitesPerResource: one testsuite per resource, a testcase per
// object and policy, counts that add up.
func TestJUnitSuitesPerResource(t *testing.T) {
	var w *JUnitWriter
	_, cov := auditRun(t, false, Options{}, func(a *Auditor) Sinks {
		var err error
		w, err = NewJUnitWriter(a.Policies(), t.TempDir())
		require.NoError(t, err)
		return Sinks{w}
	})
	var buf bytes.Buffer
	require.NoError(t, w.Close(&buf, cov))
	type testcase struct {
		Class   string    `xml:"classname,attr"`
		Name    string    `xml:"name,attr"`
		Failure *struct{} `xml:"failure"`
		Skipped *struct{} `xml:"skipped"`
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name      string     `xml:"name,attr"`
			Failures  int        `xml:"failures,attr"`
			Testcases []testcase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc), buf.String())
	assert.Equal(t, []int{11, 3, 3}, []int{doc.Tests, doc.Failures, doc.Skipped})
	require.Len(t, doc.Suites, 2)
	assert.Equal(t, "pods", doc.Suites[0].Name)
	assert.Equal(t, 2, doc.Suites[0].Failures)
	assert.Len(t, doc.Suites[0].Testcases, 9)
	assert.Equal(t, "no-privileged (binding no-privileged-dev)", doc.Suites[0].Testcases[0].Class)
	assert.Equal(t, "Pod dev/priv-a", doc.Suites[0].Testcases[0].Name)
	assert.NotNil(t, doc.Suites[0].Testcases[0].Failure)
	assert.NotNil(t, doc.Suites[0].Testcases[1].Skipped)
	assert.Equal(t, "deployments.apps", doc.Suites[1].Name)
	assert.Equal(t, 1, doc.Suites[1].Failures)
}
