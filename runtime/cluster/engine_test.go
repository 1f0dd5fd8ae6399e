package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

const admission = "../../examples/admission/"

func importedEngine(t *testing.T, edit func(*ir.PolicySet)) *runtime.Engine {
	t.Helper()
	src, err := compiler.ReadSources([]string{admission + "vap-and-binding.yaml"})
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	if edit != nil {
		edit(set)
	}
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	return e
}

// decision is what the engine says of a 20-replica Deployment in namespace.
func decision(t *testing.T, e *runtime.Engine, state runtime.ClusterState, namespace string) (denials, warnings []string) {
	t.Helper()
	ms, err := runtime.ReadManifests([]string{admission + "deployment-20.yaml"})
	require.NoError(t, err)
	req := runtime.RequestFor(ms[0].Object, nil, namespace)
	req.Cluster = state
	res, err := e.Admit(context.Background(), req)
	require.NoError(t, err)
	return res.Denials(), res.Warnings()
}

// TestDecisionsFollowTheCluster is the webhook's story on fake clients: the
// namespace's labels pick the binding, the parameter object's data the
// limit, and a parameter object deleted is parameterNotFoundAction.
func TestDecisionsFollowTheCluster(t *testing.T) {
	f := newFakeCluster(t, namespace("web", nil),
		param(configMap, "admission-system", "prod-limits", map[string]string{"admitc.dev/limits": "prod"}, map[string]any{"maxReplicas": "10"}),
		param(configMap, "admission-system", "dev-limits", nil, map[string]any{"maxReplicas": "3"}))
	e := importedEngine(t, nil)
	f.start(t, e.PolicySet())
	ctx := context.Background()
	eventually := func(what string, wantDenials, wantWarnings []string) {
		t.Helper()
		var d, w []string
		ok := assert.Eventually(t, func() bool {
			d, w = decision(t, e, f.state, "web")
			return assert.ObjectsAreEqual(wantDenials, d) && assert.ObjectsAreEqual(wantWarnings, w)
		}, 5*time.Second, 10*time.Millisecond, what)
		if !ok {
			t.Logf("denials %q, warnings %q", d, w)
		}
	}
	eventually("unlabelled: the dev binding warns", nil, []string{"[replica-limit (binding replica-limit-dev)] replicas must be at most 3, got 20"})

	_, err := f.kube.CoreV1().Namespaces().Update(ctx, namespace("web", map[string]string{"env": "prod"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("labelled env: prod: the prod binding denies", []string{"[replica-limit (binding replica-limit-prod)] replicas must be at most 10, got 20"}, nil)

	cms := f.dynamic.Resource(configMaps).Namespace("admission-system")
	_, err = cms.Update(ctx, param(configMap, "admission-system", "prod-limits", map[string]string{"admitc.dev/limits": "prod"}, map[string]any{"maxReplicas": "30"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually("the limit raised to 30", nil, nil)

	require.NoError(t, cms.Delete(ctx, "prod-limits", metav1.DeleteOptions{}))
	eventually("the parameter object deleted: parameterNotFoundAction Deny",
		[]string{"[replica-limit (binding replica-limit-prod)] failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"}, nil)
}

// TestAKindNotServedIsDecidedByTheFailurePolicy: the API server's rule for
// a paramKind it cannot resolve, under Fail and Ignore.
func TestAKindNotServedIsDecidedByTheFailurePolicy(t *testing.T) {
	for fp, want := range map[ir.FailurePolicy][]string{
		ir.Fail:   {"[replica-limit] failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limit'"},
		ir.Ignore: nil,
	} {
		t.Run(string(fp), func(t *testing.T) {
			f := newFakeCluster(t, namespace("web", map[string]string{"env": "prod"}))
			e := importedEngine(t, func(set *ir.PolicySet) {
				set.Policies[0].ParamKind = &ir.ParamKind{APIVersion: "example.com/v1", Kind: "Limit"}
				set.Policies[0].FailurePolicy = fp
			})
			f.start(t, e.PolicySet())
			denials, _ := decision(t, e, f.state, "web")
			assert.Equal(t, want, denials)
		})
	}
}
