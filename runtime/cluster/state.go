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
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"

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
	// the probe is what notices an API server gone), RecoveryInterval how
	// often it runs while a cache is out of sync (default 1s), each time
	// it answers restarting the caches out of sync.
	RetryInterval, ProbeInterval, RecoveryInterval time.Duration
	// LookupTimeout bounds the API call made for a namespace the cache does
	// not hold (default 2s).
	LookupTimeout time.Duration
}

// State is the cluster as informers show it: it implements
// runtime.ClusterState. Call Start once; on every policy reload, Watch the
// new set, swap it in, then Keep it.
type State struct {
	cfg        Config
	namespaces *watchedCache
	nsLister   corev1listers.NamespaceLister

	mu sync.Mutex
	// ctx is the context Start was given; nil before Start.
	ctx context.Context
	// kinds are the watched parameter kinds, resolved or not.
	kinds map[schema.GroupVersionKind]*paramKind

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
	if cfg.RecoveryInterval <= 0 {
		cfg.RecoveryInterval = time.Second
	}
	if cfg.LookupTimeout <= 0 {
		cfg.LookupTimeout = 2 * time.Second
	}
	s := &State{cfg: cfg, kinds: map[schema.GroupVersionKind]*paramKind{}}
	s.health.init(cfg.Logger)
	namespaces := cfg.Client.CoreV1().Namespaces()
	s.namespaces = newWatchedCache("v1/Namespace", listWatch{
		list: func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
			return namespaces.List(ctx, opts)
		},
		watch:  namespaces.Watch,
		client: cfg.Client,
	}, &corev1.Namespace{}, &s.health)
	s.nsLister = corev1listers.NewNamespaceLister(s.namespaces.store)
	return s
}

// Start runs the Namespace cache and the caches of the parameter objects
// set reads from the cluster, until ctx ends. It does not wait for them:
// see Synced and WaitForSync.
func (s *State) Start(ctx context.Context, set *ir.PolicySet) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.namespaces.run(ctx)
	s.Watch(set)
	go s.loop(ctx)
}

// Watch starts caches for the parameter objects set reads from the
// cluster that are not watched yet (see ir.PolicySet.ParamSources); a kind
// not served yet is looked up again every RetryInterval. What is already
// watched stays: on a policy reload, call Keep once the new set serves.
func (s *State) Watch(set *ir.PolicySet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvk := range paramKinds(set) {
		if _, ok := s.kinds[gvk]; !ok {
			s.kinds[gvk] = &paramKind{kind: gvk, sources: map[sourceKey]*watchedCache{}}
		}
	}
	for gvk, keys := range paramSources(set) {
		p := s.kinds[gvk]
		for key := range keys {
			if _, ok := p.sources[key]; ok {
				continue
			}
			p.sources[key] = nil
			if p.resolved {
				p.sources[key] = s.startSource(p, key)
			}
		}
	}
	s.resolveLocked(false)
}

// Keep stops the caches of what set does not read: the policies that read
// it are no longer served.
func (s *State) Keep(set *ir.PolicySet) {
	kinds, sources := paramKinds(set), paramSources(set)
	s.mu.Lock()
	defer s.mu.Unlock()
	for gvk, p := range s.kinds {
		for key, c := range p.sources {
			if !sources[gvk][key] {
				if c != nil {
					c.stop()
				}
				delete(p.sources, key)
			}
		}
		if !kinds[gvk] {
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

// paramSources are the places set reads parameter objects from, by kind.
func paramSources(set *ir.PolicySet) map[schema.GroupVersionKind]map[sourceKey]bool {
	out := map[schema.GroupVersionKind]map[sourceKey]bool{}
	for _, src := range set.ParamSources() {
		key, ok := sourceKeyOf(src)
		if !ok {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(src.Kind.APIVersion, src.Kind.Kind)
		if out[gvk] == nil {
			out[gvk] = map[sourceKey]bool{}
		}
		out[gvk][key] = true
	}
	return out
}

// loop looks up kinds not served yet, probes the API server (every
// RecoveryInterval while a cache is out of sync, else every
// ProbeInterval) and, while it answers, restarts the caches that are out
// of sync, so they list again at once instead of after their reflector's
// backoff.
func (s *State) loop(ctx context.Context) {
	retry := time.NewTicker(s.cfg.RetryInterval)
	defer retry.Stop()
	tick := time.NewTicker(s.cfg.RecoveryInterval)
	defer tick.Stop()
	var lastProbe time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
			s.mu.Lock()
			s.resolveLocked(true)
			s.mu.Unlock()
		case now := <-tick.C:
			broken := !s.inSync()
			if !broken && now.Sub(lastProbe) < s.cfg.ProbeInterval {
				continue
			}
			lastProbe = now
			if s.probe(ctx) && broken {
				s.restartBroken(ctx, now)
			}
		}
	}
}

// restartBroken restarts every cache out of sync whose backoff has passed.
func (s *State) restartBroken(ctx context.Context, now time.Time) {
	for _, c := range s.caches() {
		if c.restartIfDue(ctx, now) {
			s.cfg.Logger.Info("cache out of sync with a reachable API server; listing again", "phase", "cluster", "kind", c.kind)
		}
	}
}

// caches are every running cache: Namespaces first, then the parameter
// sources.
func (s *State) caches() []*watchedCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*watchedCache{s.namespaces}
	for _, p := range s.kinds {
		for _, c := range p.sources {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// inSync reports whether every cache has listed since its last break.
func (s *State) inSync() bool {
	for _, c := range s.caches() {
		if _, synced := c.state(); !synced {
			return false
		}
	}
	return true
}

// Synced implements runtime.ClusterState: every cache (Namespaces, and
// the parameter objects of each served kind) has listed its objects, and,
// while the API server answers, is in sync with it: after a break (the API
// server restarted, a watch failed) the webhook is not ready until its
// caches have listed again. While the API server does not answer, the last
// synced state decides and the webhook stays ready: failing closed would
// not make decisions fresher (admitc_cluster_synced and
// admitc_cluster_api_reachable say so). A kind that is not served does not
// hold readiness back: its policies are decided by their failure policy,
// as in the API server.
func (s *State) Synced() bool {
	s.mu.Lock()
	started := s.ctx != nil
	s.mu.Unlock()
	if !started {
		return false
	}
	inSync := true
	for _, c := range s.caches() {
		listed, synced := c.state()
		if !listed {
			return false
		}
		inSync = inSync && synced
	}
	return inSync || !s.health.reachable.Load()
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

// Params implements runtime.ClusterState: the caches of kind, or the API
// server's error for a kind that is not served (or not watched).
func (s *State) Params(kind schema.GroupVersionKind) (runtime.ParamStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.kinds[kind]
	switch {
	case !ok:
		return nil, notServed(kind)
	case !p.resolved:
		return nil, p.err
	}
	return kindStore{s: s, p: p}, nil
}

// notServed is the API server's error for a paramKind it cannot resolve.
func notServed(kind schema.GroupVersionKind) error {
	return fmt.Errorf("failed to find resource referenced by paramKind: '%v'", kind)
}

// kindName names a kind as apiVersion/Kind (v1/ConfigMap).
func kindName(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}
