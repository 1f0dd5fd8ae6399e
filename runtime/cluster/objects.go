package cluster

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/runtime"
)

var _ runtime.KyvernoContextSource = (*State)(nil)

// KyvernoContext implements runtime.KyvernoContextSource: Kyverno's
// resource library reads the API server as Kyverno's does (its
// contextProvider calls the API server for each resource.Get and
// resource.List, without a cache), each call bounded by LookupTimeout.
// Kyverno's global context entries are GlobalContextEntry objects admitc
// does not load; admitc serve refuses policies that read them.
func (s *State) KyvernoContext() runtime.KyvernoLibraryContext { return liveObjects{s} }

type liveObjects struct{ s *State }

// GetResource implements runtime.KyvernoLibraryContext.
func (l liveObjects) GetResource(apiVersion, resource, namespace, name string) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(l.s.baseContext(), l.s.cfg.LookupTimeout)
	defer cancel()
	// "pods/status": Kyverno reads the subresource.
	parts := strings.Split(resource, "/")
	client := l.s.cfg.Dynamic.Resource(gv.WithResource(parts[0]))
	if namespace != "" {
		return client.Namespace(namespace).Get(ctx, name, metav1.GetOptions{}, parts[1:]...)
	}
	return client.Get(ctx, name, metav1.GetOptions{}, parts[1:]...)
}

// ListResources implements runtime.KyvernoLibraryContext.
func (l liveObjects) ListResources(apiVersion, resource, namespace string, matchLabels map[string]string) (*unstructured.UnstructuredList, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(l.s.baseContext(), l.s.cfg.LookupTimeout)
	defer cancel()
	opts := metav1.ListOptions{}
	if len(matchLabels) > 0 {
		opts.LabelSelector = labels.SelectorFromSet(matchLabels).String()
	}
	client := l.s.cfg.Dynamic.Resource(gv.WithResource(resource))
	if namespace != "" {
		return client.Namespace(namespace).List(ctx, opts)
	}
	return client.List(ctx, opts)
}

// GetGlobalReference implements runtime.KyvernoLibraryContext.
func (l liveObjects) GetGlobalReference(string, string) (any, error) { return nil, nil }

// baseContext is the context the State was started with.
func (s *State) baseContext() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}
