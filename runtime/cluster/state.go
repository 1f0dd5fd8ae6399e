package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// Config configures a State.
type Config struct {
	// Client reads Namespaces; Dynamic reads parameter objects.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Mapper resolves a parameter kind to the resource serving it and its
	// scope (discovery). Before a kind that was not found is looked up
	// again, it is reset when it is a meta.ResettableRESTMapper.
	Mapper meta.RESTMapper
	// Probe checks that the API server answers (nil: reachability is
	// learnt from the informers' watch errors only).
	Probe  func(context.Context) error
	Logger *slog.Logger
	// RetryInterval is how often kinds not served are looked up again
	// (default 10s), ProbeInterval how often Probe runs (default 5s: a
	// reflector whose connection is refused retries its watch quietly, so
	// the probe is what notices an API server gone).
	RetryInterval, ProbeInterval time.Duration
	// LookupTimeout bounds the API call made for a namespace the cache does
	// not hold (default 2s).
	LookupTimeout time.Duration
}

// State is the cluster as informers show it: it implements
// runtime.ClusterState. Call Start once; on every policy reload, Watch the
// new set, swap it in, then Keep it.
type State struct {
	cfg        Config
	namespaces cache.SharedIndexInformer
	nsLister   corev1listers.NamespaceLister

	mu sync.Mutex
	// ctx is the context Start was given; nil before Start.
	ctx context.Context
	// kinds are the watched parameter kinds, resolved or not.
	kinds map[schema.GroupVersionKind]*paramInformer

	health health
}

var _ runtime.ClusterState = (*State)(nil)

// New returns a State for cfg; nothing runs before Start.
func New(cfg Config) *State {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 10 * time.Second
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = 5 * time.Second
	}
	if cfg.LookupTimeout <= 0 {
		cfg.LookupTimeout = 2 * time.Second
	}
	s := &State{cfg: cfg, kinds: map[schema.GroupVersionKind]*paramInformer{}}
	s.health.init(cfg.Logger)
	s.namespaces = corev1informers.NewNamespaceInformer(cfg.Client, 0, cache.Indexers{})
	s.nsLister = corev1listers.NewNamespaceLister(s.namespaces.GetIndexer())
	s.observe(s.namespaces, "v1/Namespace")
	return s
}

// Start runs the Namespace informer and the informers of the parameter
// kinds set reads from the cluster, until ctx ends. It does not wait for
// them: see Synced and WaitForSync.
func (s *State) Start(ctx context.Context, set *ir.PolicySet) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	go s.namespaces.RunWithContext(ctx)
	s.Watch(set)
	go s.loop(ctx)
}

// Watch starts informers for the parameter kinds set reads from the
// cluster that are not watched yet; a kind not served yet is looked up
// again every RetryInterval. Kinds already watched stay: on a policy
// reload, call Keep once the new set serves.
func (s *State) Watch(set *ir.PolicySet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvk := range paramKinds(set) {
		if _, ok := s.kinds[gvk]; !ok {
			s.kinds[gvk] = &paramInformer{kind: gvk}
		}
	}
	s.resolveLocked(false)
}

// Keep stops the informers of kinds set does not read: the policies that
// named them are no longer served.
func (s *State) Keep(set *ir.PolicySet) {
	wanted := paramKinds(set)
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvk, p := range s.kinds {
		if !wanted[gvk] {
			p.stop()
			delete(s.kinds, gvk)
			s.cfg.Logger.Info("parameter kind no longer watched", "phase", "cluster", "kind", kindName(gvk))
		}
	}
}

func paramKinds(set *ir.PolicySet) map[schema.GroupVersionKind]bool {
	out := map[schema.GroupVersionKind]bool{}
	for _, k := range set.ParamKinds() {
		out[schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)] = true
	}
	return out
}

// loop looks up kinds not served yet and probes the API server.
func (s *State) loop(ctx context.Context) {
	retry := time.NewTicker(s.cfg.RetryInterval)
	defer retry.Stop()
	probe := time.NewTicker(s.cfg.ProbeInterval)
	defer probe.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
			s.mu.Lock()
			s.resolveLocked(true)
			s.mu.Unlock()
		case <-probe.C:
			s.probe(ctx)
		}
	}
}

// Synced implements runtime.ClusterState: the Namespace informer and the
// informer of every served parameter kind have listed their objects once.
// A kind that is not served does not hold readiness back: its policies are
// decided by their failure policy, as in the API server.
func (s *State) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || !s.namespaces.HasSynced() {
		return false
	}
	for _, p := range s.kinds {
		if p.informer != nil && !p.informer.HasSynced() {
			return false
		}
	}
	return true
}

// WaitForSync waits until Synced or ctx ends, and says which.
func (s *State) WaitForSync(ctx context.Context) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for !s.Synced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// Namespace implements runtime.ClusterState: from the cache, else, as the
// API server's matcher does for a namespace its cache does not hold yet,
// from the API server (bounded by LookupTimeout).
func (s *State) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := s.nsLister.Get(name)
	if err == nil {
		return ns, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LookupTimeout)
	defer cancel()
	return s.cfg.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
}

// Params implements runtime.ClusterState: the informer of kind, or the
// API server's error for a kind that is not served (or not watched).
func (s *State) Params(kind schema.GroupVersionKind) (runtime.ParamStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.kinds[kind]
	switch {
	case !ok:
		return nil, notServed(kind)
	case p.informer == nil:
		return nil, p.err
	}
	return p, nil
}

// notServed is the API server's error for a paramKind it cannot resolve.
func notServed(kind schema.GroupVersionKind) error {
	return fmt.Errorf("failed to find resource referenced by paramKind: '%v'", kind)
}

// kindName names a kind as apiVersion/Kind (v1/ConfigMap).
func kindName(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}
