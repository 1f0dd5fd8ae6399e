package cluster_test

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/admitc/admitc/ir"
)

// TestEachParamRefIsListedNarrowed: the API server is asked, per paramRef,
// for the objects it can select only: by name (a metadata.name field
// selector) in its namespace, or in every namespace when the request's
// namespace decides; by label selector; never for every ConfigMap.
func TestEachParamRefIsListedNarrowed(t *testing.T) {
	f := newFakeCluster(t)
	f.start(t, reading(configMap,
		ir.ParamRef{Namespace: "params", Name: "limit"},
		ir.ParamRef{Name: "limit"},
		ir.ParamRef{Namespace: "params", Name: "limit", ParameterNotFoundAction: ir.ParamAllow}, // the same source
		ir.ParamRef{Selector: &ir.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}},
		ir.ParamRef{Namespace: "params", Selector: &ir.LabelSelector{}}))
	var lists []string
	for _, a := range f.dynamic.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource() == configMaps {
			r := l.GetListRestrictions()
			lists = append(lists, "namespace="+a.GetNamespace()+" fields="+r.Fields.String()+" labels="+r.Labels.String())
		}
	}
	sort.Strings(lists)
	assert.Equal(t, []string{
		"namespace= fields= labels=tier=prod",
		"namespace= fields=metadata.name=limit labels=",
		"namespace=params fields= labels=",
		"namespace=params fields=metadata.name=limit labels=",
	}, lists)
}

// TestABrokenCacheIsNotSyncedUntilItListsAgain: a watch that ends with an
// error (the API server restarted: its resource version is gone) takes the
// cache out of sync; the API server answering, the webhook is not ready
// and admitc_cluster_synced is 0 until the cache has listed again, which
// it does at once (the state restarts it), not after the reflector's
// backoff; decisions read the last synced objects meanwhile.
func TestABrokenCacheIsNotSyncedUntilItListsAgain(t *testing.T) {
	f := newFakeCluster(t, param(configMap, "params", "limit", nil, map[string]any{"max": "5"}))
	var mu sync.Mutex
	var watches []*watch.FakeWatcher
	f.dynamic.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		w := watch.NewFake()
		watches = append(watches, w)
		return true, w, nil
	})
	hold, held := make(chan struct{}), make(chan struct{}, 10)
	lists := 0
	f.dynamic.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		lists++
		again := lists > 1
		mu.Unlock()
		if again {
			held <- struct{}{}
			<-hold
		}
		return false, nil, nil
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.state.Collector())
	f.start(t, reading(configMap, ir.ParamRef{Namespace: "params", Name: "limit"}))
	synced := func() float64 { return gaugeValue(t, reg, "admitc_cluster_synced") }
	assert.Equal(t, 1.0, synced())

	mu.Lock()
	last := watches[len(watches)-1]
	mu.Unlock()
	time.Sleep(time.Second) // restarts are at least a second apart; the reflector's own backoff is at least 800ms
	start := time.Now()
	last.Error(&apierrors.NewResourceExpired("too old resource version: 10 (20)").ErrStatus)
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("the cache did not list again")
	}
	took := time.Since(start)
	t.Logf("listed again %s after the break", took.Round(time.Millisecond))
	assert.Less(t, took, 500*time.Millisecond, "listed again at once, not after the reflector's backoff")
	assert.False(t, f.state.Synced(), "not ready while the API server answers and the cache has not listed again")
	assert.Equal(t, 0.0, synced())
	store, err := f.state.Params(configMap)
	require.NoError(t, err)
	_, err = store.Get("params", "limit")
	assert.NoError(t, err, "the last synced objects still decide")

	close(hold)
	require.Eventually(t, f.state.Synced, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1.0, synced())
}

// gaugeValue is the value of the unlabelled gauge called name in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// TestANamespaceGivenToAClusterScopedKindReadsNothing: the API server
// refuses such a paramRef before reading anything, and no Role could grant
// the read: nothing is listed and readiness is not held back.
func TestANamespaceGivenToAClusterScopedKindReadsNothing(t *testing.T) {
	f := newFakeCluster(t, param(limit, "", "strict", nil, nil))
	f.mapper.serve(limit, meta.RESTScopeRoot)
	f.start(t, reading(limit, ir.ParamRef{Namespace: "params", Name: "strict"}, ir.ParamRef{Name: "strict"}))
	lists := 0
	for _, a := range f.dynamic.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	assert.Equal(t, 1, lists, "only the paramRef without a namespace is listed")
	assert.True(t, f.state.Synced())
	store, err := f.state.Params(limit)
	require.NoError(t, err)
	_, err = store.Get("", "strict")
	assert.NoError(t, err)
}
