package runtime

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/internal/celenv"
)

// KyvernoLibraryContext is what Kyverno's libraries read outside the
// request: objects of the cluster for resource.Get and resource.List, and
// entries of Kyverno's global context for globalContext.Get. A
// ClusterState that offers them implements KyvernoContextSource; without
// one every such call fails (celenv.ErrNoCluster), and the policy's
// failure decides.
type KyvernoLibraryContext interface {
	// GetResource returns the object of apiVersion and resource (plural)
	// called name in namespace ("" for a cluster-scoped one), or an
	// apierrors.IsNotFound error.
	GetResource(apiVersion, resource, namespace, name string) (*unstructured.Unstructured, error)
	// ListResources returns the objects of apiVersion and resource in
	// namespace whose labels include matchLabels.
	ListResources(apiVersion, resource, namespace string, matchLabels map[string]string) (*unstructured.UnstructuredList, error)
	// GetGlobalReference returns a global context entry, or the value of
	// one of its projections.
	GetGlobalReference(name, projection string) (any, error)
}

// KyvernoContextSource is a ClusterState that serves Kyverno's libraries.
type KyvernoContextSource interface {
	KyvernoContext() KyvernoLibraryContext
}

// libraryContext adapts a KyvernoLibraryContext to the interfaces of
// Kyverno's resource and globalContext libraries; what admitc never does
// (create objects, map a kind to its resource) fails.
type libraryContext struct {
	celenv.NoCluster
	KyvernoLibraryContext
}

// GetResource implements resource.ContextInterface.
func (c libraryContext) GetResource(apiVersion, resource, namespace, name string) (*unstructured.Unstructured, error) {
	return c.KyvernoLibraryContext.GetResource(apiVersion, resource, namespace, name)
}

// ListResources implements resource.ContextInterface.
func (c libraryContext) ListResources(apiVersion, resource, namespace string, l map[string]string) (*unstructured.UnstructuredList, error) {
	return c.KyvernoLibraryContext.ListResources(apiVersion, resource, namespace, l)
}

// GetGlobalReference implements globalcontext.ContextInterface.
func (c libraryContext) GetGlobalReference(name, projection string) (any, error) {
	return c.KyvernoLibraryContext.GetGlobalReference(name, projection)
}

// PostResource implements resource.ContextInterface: admitc creates no
// objects at admission.
func (c libraryContext) PostResource(string, string, string, map[string]any) (*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("resource.Post: admitc does not create objects at admission")
}

// StaticObjects are objects read from files, as Kyverno's libraries see
// them in kyverno test: the objects of its fake cluster (a test with
// clusterResources), or of a context file (FakeContext: kyverno test's
// fake context, which lists the objects of exactly the namespace asked
// for, "" meaning cluster-scoped ones, whatever labels are asked for, and
// fails a list of a resource it has no object of), and global context
// entries by name.
type StaticObjects struct {
	Objects       []*unstructured.Unstructured
	FakeContext   bool
	GlobalContext map[string]any
}

var _ KyvernoLibraryContext = (*StaticObjects)(nil)

// GetResource implements KyvernoLibraryContext.
func (s *StaticObjects) GetResource(apiVersion, resource, namespace, name string) (*unstructured.Unstructured, error) {
	gvr, err := parseGVR(apiVersion, resource)
	if err != nil {
		return nil, err
	}
	for _, o := range s.Objects {
		if ResourceFor(o.GroupVersionKind()) == gvr && o.GetNamespace() == namespace && o.GetName() == name {
			return o.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

// ListResources implements KyvernoLibraryContext.
func (s *StaticObjects) ListResources(apiVersion, resource, namespace string, matchLabels map[string]string) (*unstructured.UnstructuredList, error) {
	gvr, err := parseGVR(apiVersion, resource)
	if err != nil {
		return nil, err
	}
	sel := labels.SelectorFromSet(matchLabels)
	out := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "List"}}
	known := false
	for _, o := range s.Objects {
		if ResourceFor(o.GroupVersionKind()) != gvr {
			continue
		}
		known = true
		switch {
		case s.FakeContext && o.GetNamespace() == namespace:
			out.Items = append(out.Items, *o.DeepCopy())
		case !s.FakeContext && (namespace == "" || o.GetNamespace() == namespace) && sel.Matches(labels.Set(o.GetLabels())):
			out.Items = append(out.Items, *o.DeepCopy())
		}
	}
	if s.FakeContext && !known {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s resource not found", gvr.GroupResource()))
	}
	return out, nil
}

// GetGlobalReference implements KyvernoLibraryContext as kyverno test's
// fake context does: a missing entry is null; a projection is a key of
// the entry's object.
func (s *StaticObjects) GetGlobalReference(name, projection string) (any, error) {
	data, ok := s.GlobalContext[name]
	if !ok {
		return nil, nil
	}
	if projection == "" {
		return data, nil
	}
	m, ok := data.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q: stored value is not an object", projection, name)
	}
	v, found := m[projection]
	if !found {
		return nil, fmt.Errorf("projection %q not found in global context entry %q", projection, name)
	}
	return v, nil
}

func parseGVR(apiVersion, resource string) (schema.GroupVersionResource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return gv.WithResource(resource), nil
}
