package cluster

import (
	"context"
	"fmt"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// paramKind is one parameter kind the policies name: the resource serving
// it once discovery finds it (err says why not yet), and one cache per
// place a paramRef reads it from.
type paramKind struct {
	kind       schema.GroupVersionKind
	resource   schema.GroupVersionResource
	resolved   bool
	namespaced bool
	err        error
	// sources are the places its objects are read from; a source's cache
	// runs once the kind is resolved.
	sources map[sourceKey]*watchedCache
}

// sourceKey is where one paramRef reads objects of a kind: a namespace
// ("" for any namespace, or a cluster-scoped kind) and a name, or a label
// selector (in its canonical text) when the name is empty.
type sourceKey struct {
	namespace, name, selector string
}

// sourceKeyOf is src's key, false for a selector that does not parse (the
// decision reports it; there is nothing to watch).
func sourceKeyOf(src ir.ParamSource) (sourceKey, bool) {
	if src.Name != "" {
		return sourceKey{namespace: src.Namespace, name: src.Name}, true
	}
	sel, err := metav1.LabelSelectorAsSelector(apiconv.Selector(src.Selector))
	if err != nil {
		return sourceKey{}, false
	}
	return sourceKey{namespace: src.Namespace, selector: sel.String()}, true
}

// listOptions narrow a list or watch to the objects k can select, as the
// API server filters them: metadata.name for a name, the label selector
// otherwise. The namespace is the request's.
func (k sourceKey) listOptions(opts *metav1.ListOptions) {
	if k.name != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", k.name).String()
	} else {
		opts.LabelSelector = k.selector
	}
}

var _ runtime.ParamStore = kindStore{}

// resolveLocked looks up the resource of every watched kind not resolved
// yet, and starts its caches once found; retry resets the mapper first
// (discovery may serve a kind it did not before). Call with s.mu held.
func (s *State) resolveLocked(retry bool) {
	if s.ctx == nil {
		return
	}
	var pending []*paramKind
	for _, p := range s.kinds {
		if !p.resolved {
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

// resolve starts p's caches when its kind is served, and logs the kind
// going from one state to the other.
func (s *State) resolve(p *paramKind) {
	mapping, err := s.cfg.Mapper.RESTMapping(p.kind.GroupKind(), p.kind.Version)
	if err != nil {
		if p.err == nil {
			s.cfg.Logger.Warn("parameter kind not served; its policies are decided by their failure policy until it is, looked up again every "+s.cfg.RetryInterval.String(),
				"phase", "cluster", "kind", kindName(p.kind), "error", err.Error())
		}
		p.err = notServed(p.kind)
		return
	}
	p.resource, p.resolved, p.err = mapping.Resource, true, nil
	p.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	for key := range p.sources {
		p.sources[key] = s.startSource(p, key)
	}
	s.cfg.Logger.Info("watching parameter kind", "phase", "cluster", "kind", kindName(p.kind),
		"resource", mapping.Resource.GroupResource().String(), "sources", len(p.sources))
}

// startSource runs the cache of the objects of p that key selects; none
// for a namespace given to a cluster-scoped kind: the API server refuses
// such a paramRef before reading anything (and no Role could grant it).
func (s *State) startSource(p *paramKind, key sourceKey) *watchedCache {
	if !p.namespaced && key.namespace != "" {
		return nil
	}
	client := s.cfg.Dynamic.Resource(p.resource)
	var ri interface {
		List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
		Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	} = client
	if key.namespace != "" {
		ri = client.Namespace(key.namespace)
	}
	lw := listWatch{
		list: func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
			key.listOptions(&opts)
			return ri.List(ctx, opts)
		},
		watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			key.listOptions(&opts)
			return ri.Watch(ctx, opts)
		},
		client: s.cfg.Dynamic,
	}
	c := newWatchedCache(kindName(p.kind), lw, &unstructured.Unstructured{}, &s.health)
	c.run(s.ctx)
	return c
}

// kindStore is the runtime's view of one resolved parameter kind: each
// lookup is served by the cache of the paramRef that asks for it.
type kindStore struct {
	s *State
	p *paramKind
}

// Namespaced implements runtime.ParamStore.
func (k kindStore) Namespaced() bool { return k.p.namespaced }

// Get implements runtime.ParamStore: from the cache of the paramRef naming
// name in namespace, or in the request's namespace.
func (k kindStore) Get(namespace, name string) (k8sruntime.Object, error) {
	c, err := k.source(namespace, sourceKey{name: name})
	if err != nil {
		return nil, err
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := c.store.GetByKey(key)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, apierrors.NewNotFound(k.p.resource.GroupResource(), name)
	}
	return obj.(k8sruntime.Object), nil
}

// List implements runtime.ParamStore: from the cache of the paramRef with
// selector sel in namespace, or in the request's namespace, by name.
func (k kindStore) List(namespace string, sel labels.Selector) ([]k8sruntime.Object, error) {
	if _, selectable := sel.Requirements(); !selectable {
		return nil, nil // a nil selector selects nothing
	}
	c, err := k.source(namespace, sourceKey{selector: sel.String()})
	if err != nil {
		return nil, err
	}
	items, err := c.store.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	var out []k8sruntime.Object
	for _, item := range items {
		if u := item.(*unstructured.Unstructured); sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].(*unstructured.Unstructured).GetName() < out[j].(*unstructured.Unstructured).GetName()
	})
	return out, nil
}

// source finds the cache of the paramRef key (without its namespace) in
// namespace, else in any namespace (a paramRef without a namespace);
// its error is the API server's for a cache that has not listed yet.
func (k kindStore) source(namespace string, key sourceKey) (*watchedCache, error) {
	k.s.mu.Lock()
	key.namespace = namespace
	c := k.p.sources[key]
	if c == nil {
		key.namespace = ""
		c = k.p.sources[key]
	}
	k.s.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("parameter objects of %s in namespace %q (name %q, selector %q) are not watched: no policy served reads them",
			kindName(k.p.kind), namespace, key.name, key.selector)
	}
	if listed, _ := c.state(); !listed {
		apiVersion, kind := k.p.kind.ToAPIVersionAndKind()
		return nil, fmt.Errorf("paramKind kind `%v` not yet synced to use for admission", &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind})
	}
	return c, nil
}
