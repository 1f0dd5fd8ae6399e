package cluster

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/admitc/admitc/runtime"
)

// paramInformer watches the objects of one parameter kind; informer is nil
// while the kind is not served, err saying so.
type paramInformer struct {
	kind       schema.GroupVersionKind
	namespaced bool
	informer   cache.SharedIndexInformer
	lister     cache.GenericLister
	cancel     context.CancelFunc
	err        error
}

var _ runtime.ParamStore = (*paramInformer)(nil)

// resolveLocked starts an informer for every watched kind that has none,
// once the mapper finds the resource serving it; retry resets the mapper
// first (discovery may serve a kind it did not before). Call with s.mu held.
func (s *State) resolveLocked(retry bool) {
	if s.ctx == nil {
		return
	}
	var pending []*paramInformer
	for _, p := range s.kinds {
		if p.informer == nil {
			pending = append(pending, p)
		}
	}
	if len(pending) == 0 {
		return
	}
	if r, ok := s.cfg.Mapper.(meta.ResettableRESTMapper); ok && retry {
		r.Reset()
	}
	for _, p := range pending {
		s.resolve(p)
	}
}

// resolve starts p's informer when its kind is served, and logs the kind
// going from one state to the other.
func (s *State) resolve(p *paramInformer) {
	mapping, err := s.cfg.Mapper.RESTMapping(p.kind.GroupKind(), p.kind.Version)
	if err != nil {
		if p.err == nil {
			s.cfg.Logger.Warn("parameter kind not served; its policies are decided by their failure policy until it is, looked up again every "+s.cfg.RetryInterval.String(),
				"phase", "cluster", "kind", kindName(p.kind), "error", err.Error())
		}
		p.err = notServed(p.kind)
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	inf := dynamicinformer.NewFilteredDynamicInformer(s.cfg.Dynamic, mapping.Resource, "", 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil)
	p.informer, p.lister, p.cancel, p.err = inf.Informer(), inf.Lister(), cancel, nil
	p.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	s.observe(p.informer, kindName(p.kind))
	go p.informer.RunWithContext(ctx)
	s.cfg.Logger.Info("watching parameter kind", "phase", "cluster", "kind", kindName(p.kind), "resource", mapping.Resource.GroupResource().String())
}

// stop stops p's informer, if it runs.
func (p *paramInformer) stop() {
	if p.cancel != nil {
		p.cancel()
	}
}

// Namespaced implements runtime.ParamStore.
func (p *paramInformer) Namespaced() bool { return p.namespaced }

// Get implements runtime.ParamStore.
func (p *paramInformer) Get(namespace, name string) (k8sruntime.Object, error) {
	if err := p.synced(); err != nil {
		return nil, err
	}
	if p.namespaced {
		return p.lister.ByNamespace(namespace).Get(name)
	}
	return p.lister.Get(name)
}

// List implements runtime.ParamStore.
func (p *paramInformer) List(namespace string, sel labels.Selector) ([]k8sruntime.Object, error) {
	if err := p.synced(); err != nil {
		return nil, err
	}
	if p.namespaced {
		return p.lister.ByNamespace(namespace).List(sel)
	}
	return p.lister.List(sel)
}

// synced is the API server's error for a kind whose informer has not
// listed its objects yet (a kind that came to be served after start-up).
func (p *paramInformer) synced() error {
	if p.informer.HasSynced() {
		return nil
	}
	apiVersion, kind := p.kind.ToAPIVersionAndKind()
	return fmt.Errorf("paramKind kind `%v` not yet synced to use for admission", &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind})
}
