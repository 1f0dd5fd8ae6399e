package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/admitc/admitc/runtime/cluster"
)

func TestMetricsSayWhatIsSynced(t *testing.T) {
	f := newFakeCluster(t, namespace("shop", nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.state.Collector())
	f.start(t, usingKinds(configMap, limit))
	want := `
# HELP admitc_cluster_cache_synced 1 while every cache of a kind (v1/Namespace, and each parameter kind) has listed its objects since its last break; 0 before, after a break until it lists again, and for a parameter kind that is not served.
# TYPE admitc_cluster_cache_synced gauge
admitc_cluster_cache_synced{kind="v1/Namespace"} 1
admitc_cluster_cache_synced{kind="v1/ConfigMap"} 1
admitc_cluster_cache_synced{kind="example.com/v1/Limit"} 0
# HELP admitc_cluster_synced 1 while every cache (namespaces, and the parameter objects each paramRef reads) has listed its objects since its last break (the API server restarting, a watch failing); 0 before, and while one has not listed again.
# TYPE admitc_cluster_synced gauge
admitc_cluster_synced 1
# HELP admitc_cluster_cached_objects Objects held in the caches of a kind: every namespace, and for a parameter kind only the objects its paramRefs name or select.
# TYPE admitc_cluster_cached_objects gauge
admitc_cluster_cached_objects{kind="v1/Namespace"} 1
admitc_cluster_cached_objects{kind="v1/ConfigMap"} 0
admitc_cluster_cached_objects{kind="example.com/v1/Limit"} 0
# HELP admitc_cluster_watches Lists and watches of a kind: one for namespaces, one per distinct paramRef (namespace, and name or selector) of a parameter kind.
# TYPE admitc_cluster_watches gauge
admitc_cluster_watches{kind="v1/Namespace"} 1
admitc_cluster_watches{kind="v1/ConfigMap"} 1
admitc_cluster_watches{kind="example.com/v1/Limit"} 0
# HELP admitc_cluster_api_reachable 1 while the API server answers; 0 while it does not and decisions are made from the last synced state.
# TYPE admitc_cluster_api_reachable gauge
admitc_cluster_api_reachable 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "admitc_cluster_cache_synced", "admitc_cluster_synced",
		"admitc_cluster_cached_objects", "admitc_cluster_watches", "admitc_cluster_api_reachable"))
	n, err := testutil.GatherAndCount(reg, "admitc_cluster_last_event_age_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestUnreachableAPIServer: a failing probe flips reachability and says so
// once; the state still answers from its caches; a probe that succeeds
// flips it back.
func TestUnreachableAPIServer(t *testing.T) {
	var down atomic.Bool
	f := newFakeCluster(t, namespace("shop", map[string]string{"env": "prod"}))
	f.state = cluster.New(cluster.Config{Client: f.kube, Dynamic: f.dynamic, Mapper: f.mapper,
		Logger: slog.New(slog.NewJSONHandler(&syncWriter{w: f.logs}, nil)), ProbeInterval: 10 * time.Millisecond,
		Probe: func(context.Context) error {
			if down.Load() {
				return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
			}
			return nil
		}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.state.Collector())
	f.start(t, usingKinds())
	reachable := func() float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "admitc_cluster_api_reachable" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no admitc_cluster_api_reachable")
		return 0
	}
	down.Store(true)
	require.Eventually(t, func() bool { return reachable() == 0 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 1, strings.Count(f.logged(), "API server unreachable; deciding from the last synced state"), f.logged())
	assert.Contains(t, f.logged(), `"error":"dial tcp 127.0.0.1:6443: connect: connection refused"`)

	ns, err := f.state.Namespace(context.Background(), "shop")
	require.NoError(t, err, "the cache still answers")
	assert.Equal(t, "prod", ns.Labels["env"])
	assert.True(t, f.state.Synced(), "readiness stays: the webhook does not fail closed on its own connection")

	down.Store(false)
	require.Eventually(t, func() bool { return reachable() == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, f.logged(), "API server reachable again; the caches catch up")
}

// TestForbiddenIsLoggedOnce: a cache the webhook's roles do not allow
// never syncs, so the webhook never turns ready, and the log says why once.
func TestForbiddenIsLoggedOnce(t *testing.T) {
	f := newFakeCluster(t)
	f.kube.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New(`User "system:serviceaccount:admission-system:admitc" cannot list resource "namespaces"`))
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.state.Start(ctx, usingKinds())
	require.Eventually(t, func() bool { return strings.Contains(f.logged(), "cannot list or watch v1/Namespace") }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // the reflector retries
	assert.False(t, f.state.Synced())
	assert.Equal(t, 1, strings.Count(f.logged(), "cannot list or watch"), f.logged())
	assert.Contains(t, f.logged(), `"msg":"cannot list or watch v1/Namespace; check the webhook's ClusterRole, and its Role in the namespace a paramRef names"`)
}
