package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime/cluster"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	limits     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "limits"}
	configMap  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	limit      = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Limit"}
)

// mapper is a RESTMapper whose kinds can be served while it is in use, as
// discovery serves a CRD once it is installed; it counts resets.
type mapper struct {
	mu     sync.Mutex
	m      *meta.DefaultRESTMapper
	resets int
}

func newMapper() *mapper {
	m := &mapper{m: meta.NewDefaultRESTMapper(nil)}
	m.serve(configMap, meta.RESTScopeNamespace)
	return m
}

func (m *mapper) serve(gvk schema.GroupVersionKind, scope meta.RESTScope) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m.Add(gvk, scope)
}

func (m *mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m.RESTMapping(gk, versions...)
}

func (m *mapper) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets++
}

// The rest of meta.RESTMapper is never called by the state.
func (m *mapper) KindFor(schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return schema.GroupVersionKind{}, errors.New("unused")
}
func (m *mapper) KindsFor(schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return nil, errors.New("unused")
}
func (m *mapper) ResourceFor(schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, errors.New("unused")
}
func (m *mapper) ResourcesFor(schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return nil, errors.New("unused")
}
func (m *mapper) RESTMappings(schema.GroupKind, ...string) ([]*meta.RESTMapping, error) {
	return nil, errors.New("unused")
}
func (m *mapper) ResourceSingularizer(string) (string, error) { return "", errors.New("unused") }

var _ meta.ResettableRESTMapper = (*mapper)(nil)

// fakeCluster is a State on fake clients, with what the test needs to
// change the cluster under it.
type fakeCluster struct {
	state   *cluster.State
	kube    *kubefake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	mapper  *mapper
	logs    *bytes.Buffer
}

func newFakeCluster(t *testing.T, objs ...k8sruntime.Object) *fakeCluster {
	t.Helper()
	var nss, params []k8sruntime.Object
	for _, o := range objs {
		if _, ok := o.(*corev1.Namespace); ok {
			nss = append(nss, o)
		} else {
			params = append(params, o)
		}
	}
	f := &fakeCluster{
		kube:    kubefake.NewClientset(nss...),
		dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(), map[schema.GroupVersionResource]string{configMaps: "ConfigMapList", limits: "LimitList"}, params...),
		mapper:  newMapper(),
		logs:    &bytes.Buffer{},
	}
	f.state = cluster.New(cluster.Config{Client: f.kube, Dynamic: f.dynamic, Mapper: f.mapper,
		Logger: slog.New(slog.NewJSONHandler(&syncWriter{w: f.logs}, nil)), RetryInterval: 20 * time.Millisecond, ProbeInterval: time.Hour, RecoveryInterval: 20 * time.Millisecond})
	return f
}

// start starts the state on set and waits for it to sync.
func (f *fakeCluster) start(t *testing.T, set *ir.PolicySet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.state.Start(ctx, set)
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	require.True(t, f.state.WaitForSync(wait), "the informers did not sync")
}

var logMu sync.Mutex

type syncWriter struct{ w *bytes.Buffer }

func (s *syncWriter) Write(p []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	return s.w.Write(p)
}

func (f *fakeCluster) logged() string {
	logMu.Lock()
	defer logMu.Unlock()
	return f.logs.String()
}

func namespace(name string, l map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

func param(gvk schema.GroupVersionKind, namespace, name string, l map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": data}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(l)
	return u
}

// usingKinds is a set of policies reading parameter objects of kinds, each
// by the name "x" in the request's namespace.
func usingKinds(kinds ...schema.GroupVersionKind) *ir.PolicySet {
	set := &ir.PolicySet{Version: ir.Version}
	for _, k := range kinds {
		set.Policies = append(set.Policies, reading(k, ir.ParamRef{Name: "x"}).Policies...)
	}
	return set
}

// reading is a set of policies reading parameter objects of kind, one per
// paramRef.
func reading(k schema.GroupVersionKind, refs ...ir.ParamRef) *ir.PolicySet {
	set := &ir.PolicySet{Version: ir.Version}
	apiVersion, kind := k.ToAPIVersionAndKind()
	for i := range refs {
		refs[i].ParameterNotFoundAction = ir.ParamDeny
		set.Policies = append(set.Policies, ir.Policy{Name: fmt.Sprintf("%s-%d", kind, i), ParamKind: &ir.ParamKind{APIVersion: apiVersion, Kind: kind}, ParamRef: &refs[i]})
	}
	return set
}

func TestNamespacesFollowTheCluster(t *testing.T) {
	f := newFakeCluster(t, namespace("shop", map[string]string{"env": "dev"}))
	f.start(t, usingKinds())
	ctx := context.Background()
	ns, err := f.state.Namespace(ctx, "shop")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"env": "dev"}, ns.Labels)

	_, err = f.kube.CoreV1().Namespaces().Update(ctx, namespace("shop", map[string]string{"env": "prod"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ns, err := f.state.Namespace(ctx, "shop")
		return err == nil && ns.Labels["env"] == "prod"
	}, 5*time.Second, 10*time.Millisecond)

	// A namespace the cache does not hold is asked of the API server.
	_, err = f.state.Namespace(ctx, "nowhere")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestParamsFollowTheCluster(t *testing.T) {
	f := newFakeCluster(t,
		param(configMap, "admission-system", "prod-limits", map[string]string{"tier": "prod"}, map[string]any{"max": "10"}),
		param(configMap, "admission-system", "dev-limits", nil, map[string]any{"max": "3"}),
		param(configMap, "shop", "prod-limits", map[string]string{"tier": "prod"}, map[string]any{"max": "1"}))
	f.start(t, reading(configMap, ir.ParamRef{Namespace: "admission-system", Name: "prod-limits"}, ir.ParamRef{Name: "dev-limits"},
		ir.ParamRef{Selector: &ir.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}))
	store, err := f.state.Params(configMap)
	require.NoError(t, err)
	assert.True(t, store.Namespaced())

	got, err := store.Get("admission-system", "prod-limits")
	require.NoError(t, err)
	assert.Equal(t, "10", got.(*unstructured.Unstructured).Object["data"].(map[string]any)["max"])
	list, err := store.List("admission-system", labels.SelectorFromSet(labels.Set{"tier": "prod"}))
	require.NoError(t, err)
	assert.Len(t, list, 1, "only admission-system's")

	ctx := context.Background()
	_, err = f.dynamic.Resource(configMaps).Namespace("admission-system").Update(ctx,
		param(configMap, "admission-system", "prod-limits", nil, map[string]any{"max": "20"}), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := store.Get("admission-system", "prod-limits")
		return err == nil && got.(*unstructured.Unstructured).Object["data"].(map[string]any)["max"] == "20"
	}, 5*time.Second, 10*time.Millisecond)

	require.NoError(t, f.dynamic.Resource(configMaps).Namespace("admission-system").Delete(ctx, "dev-limits", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := store.Get("admission-system", "dev-limits")
		return apierrors.IsNotFound(err)
	}, 5*time.Second, 10*time.Millisecond)
}

func TestAKindNotServedIsLookedUpAgain(t *testing.T) {
	f := newFakeCluster(t, param(limit, "", "strict", nil, map[string]any{"max": "1"}))
	set := usingKinds(configMap)
	set.Policies = append(set.Policies, reading(limit, ir.ParamRef{Name: "strict"}).Policies...)
	f.start(t, set)
	_, err := f.state.Params(limit)
	require.EqualError(t, err, "failed to find resource referenced by paramKind: 'example.com/v1, Kind=Limit'")
	assert.True(t, f.state.Synced(), "a kind not served does not hold readiness back")
	assert.Contains(t, f.logged(), `"msg":"parameter kind not served; its policies are decided by their failure policy until it is, looked up again every 20ms"`)

	// The CRD is installed: discovery serves the kind, cluster-scoped.
	f.mapper.serve(limit, meta.RESTScopeRoot)
	require.Eventually(t, func() bool {
		store, err := f.state.Params(limit)
		if err != nil {
			return false
		}
		_, err = store.Get("", "strict")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	store, err := f.state.Params(limit)
	require.NoError(t, err)
	assert.False(t, store.Namespaced())
	f.mapper.mu.Lock()
	assert.Positive(t, f.mapper.resets, "discovery is asked afresh")
	f.mapper.mu.Unlock()
	assert.Contains(t, f.logged(), `"msg":"watching parameter kind","phase":"cluster","kind":"example.com/v1/Limit","resource":"limits.example.com","sources":1`)
}

func TestWatchFollowsThePolicies(t *testing.T) {
	f := newFakeCluster(t)
	f.start(t, usingKinds(configMap))
	_, err := f.state.Params(configMap)
	require.NoError(t, err)

	f.state.Watch(usingKinds(limit))
	_, err = f.state.Params(configMap)
	require.NoError(t, err, "Watch only adds: the set being replaced still serves")
	f.state.Keep(usingKinds())
	_, err = f.state.Params(configMap)
	require.EqualError(t, err, "failed to find resource referenced by paramKind: '/v1, Kind=ConfigMap'", "a kind no policy names is not watched")
	assert.Contains(t, f.logged(), `"msg":"parameter kind no longer watched","phase":"cluster","kind":"v1/ConfigMap"`)

	f.state.Watch(usingKinds(configMap))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.True(t, f.state.WaitForSync(ctx))
	_, err = f.state.Params(configMap)
	require.NoError(t, err)
}

func TestCompiledInParamsAreNotWatched(t *testing.T) {
	set := usingKinds(limit)
	set.Policies[0].MatchConstraints = &ir.MatchResources{}
	set.Policies[0].Bindings = []ir.Binding{{Name: "b", ParamRef: &ir.ParamRef{Name: "x"}, Params: []map[string]any{{"kind": "Limit"}}}}
	assert.Empty(t, set.ParamKinds(), "a Gatekeeper constraint travels with its binding")
	set.Policies[0].Bindings = append(set.Policies[0].Bindings, ir.Binding{Name: "c", ParamRef: &ir.ParamRef{Name: "x"}})
	assert.Equal(t, []ir.ParamKind{{APIVersion: "example.com/v1", Kind: "Limit"}}, set.ParamKinds())
}

func TestNotSyncedBeforeStart(t *testing.T) {
	f := newFakeCluster(t)
	assert.False(t, f.state.Synced())
	_, err := f.state.Params(configMap)
	assert.Error(t, err)
}
