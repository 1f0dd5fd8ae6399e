package runtime

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// ClusterState is what a decision reads from the cluster besides the
// request: Namespaces, for namespace selectors and namespaceObject, and the
// parameter objects of policies with a paramKind. StaticState serves them
// from files (offline runs, tests); runtime/cluster serves them from the
// API server through informers, as the API server's own policy plugins do.
type ClusterState interface {
	// Namespace returns the namespace called name, or an error
	// (apierrors.IsNotFound when there is no such namespace).
	Namespace(ctx context.Context, name string) (*corev1.Namespace, error)
	// Params returns the parameter objects of kind. An error means the kind
	// cannot be read (not served, not synced yet): the API server makes it
	// a configuration error of the policy, decided by its failure policy.
	Params(kind schema.GroupVersionKind) (ParamStore, error)
	// Synced reports whether the state has been read in full at least once.
	Synced() bool
}

// ParamStore holds the parameter objects of one kind.
type ParamStore interface {
	// Namespaced reports whether the kind's objects live in namespaces.
	Namespaced() bool
	// Get returns the object called name in namespace ("" for a
	// cluster-scoped kind), or an apierrors.IsNotFound error.
	Get(namespace, name string) (k8sruntime.Object, error)
	// List returns the objects in namespace ("" for a cluster-scoped kind)
	// whose labels sel matches.
	List(namespace string, sel labels.Selector) ([]k8sruntime.Object, error)
}

// StaticState is a ClusterState read from files: every namespace exists,
// labelled with its name and the labels NamespaceLabels gives it, and the
// parameter objects are ParamObjects.
type StaticState struct {
	// NamespaceLabels are namespace labels by namespace name.
	NamespaceLabels map[string]map[string]string
	// Namespaces are namespaces read whole (annotations too), by name;
	// they take precedence over NamespaceLabels.
	Namespaces map[string]*corev1.Namespace
	// ParamObjects are the parameter objects, of every kind.
	ParamObjects []*unstructured.Unstructured
	// Library is what Kyverno's resource and globalContext libraries read
	// (nil: nothing, every call fails).
	Library KyvernoLibraryContext
}

// KyvernoContext implements KyvernoContextSource.
func (s *StaticState) KyvernoContext() KyvernoLibraryContext { return s.Library }

var _ ClusterState = (*StaticState)(nil)

// Namespace implements ClusterState: every namespace exists.
func (s *StaticState) Namespace(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := s.Namespaces[name]; ok {
		out := ns.DeepCopy()
		out.Labels = namespaceWithLabels(name, ns.Labels).Labels
		return out, nil
	}
	return namespaceWithLabels(name, s.NamespaceLabels[name]), nil
}

// Params implements ClusterState: the objects of kind among ParamObjects, in a
// namespace when the kind is a core namespaced kind or one of its objects
// has a namespace.
func (s *StaticState) Params(kind schema.GroupVersionKind) (ParamStore, error) {
	return newParamList(kind, s.ParamObjects), nil
}

// Synced implements ClusterState: files are read in full.
func (s *StaticState) Synced() bool { return true }

// namespaceWithLabels is a Namespace as the API server stores it: its name
// label (kubernetes.io/metadata.name) and the given labels.
func namespaceWithLabels(name string, extra map[string]string) *corev1.Namespace {
	l := map[string]string{corev1.LabelMetadataName: name}
	for k, v := range extra {
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// paramList holds the parameter objects of one kind, read from files or
// compiled in with a binding.
type paramList struct {
	kind       schema.GroupVersionKind
	namespaced bool
	objs       []*unstructured.Unstructured
}

func newParamList(kind schema.GroupVersionKind, all []*unstructured.Unstructured) *paramList {
	s := &paramList{kind: kind}
	for _, o := range all {
		if o.GroupVersionKind() == kind {
			s.objs = append(s.objs, o)
		}
	}
	s.namespaced = paramKindNamespaced(kind.Kind, s.objs)
	return s
}

// Namespaced implements ParamStore.
func (s *paramList) Namespaced() bool { return s.namespaced }

// Get implements ParamStore.
func (s *paramList) Get(namespace, name string) (k8sruntime.Object, error) {
	for _, o := range s.objs {
		if o.GetNamespace() == namespace && o.GetName() == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: s.kind.Group, Resource: s.kind.Kind}, name)
}

// List implements ParamStore.
func (s *paramList) List(namespace string, sel labels.Selector) ([]k8sruntime.Object, error) {
	var out []k8sruntime.Object
	for _, o := range s.objs {
		if o.GetNamespace() == namespace && sel.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

// paramKindNamespaced says whether a param kind read from files is
// namespaced: the core kinds admitc knows, else whether one of its objects
// carries a namespace.
func paramKindNamespaced(kind string, objs []*unstructured.Unstructured) bool {
	switch kind {
	case "ConfigMap", "Secret":
		return true
	case "Namespace":
		return false
	}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			return true
		}
	}
	return false
}

// namespaceLister shows the upstream matcher the namespaces of a
// ClusterState. A namespace that does not exist is an error, not
// NotFound: the upstream matcher would then ask an API client it is not
// given; the request is decided the same way (a configuration error,
// decided by the failure policy).
type namespaceLister struct {
	ctx   context.Context
	state ClusterState
}

var _ corev1listers.NamespaceLister = namespaceLister{}

// Get implements corev1listers.NamespaceLister.
func (l namespaceLister) Get(name string) (*corev1.Namespace, error) {
	ns, err := l.state.Namespace(l.ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("namespace %q not found", name)
	}
	return ns, err
}

// List implements corev1listers.NamespaceLister; the matcher never lists.
func (l namespaceLister) List(labels.Selector) ([]*corev1.Namespace, error) {
	return nil, fmt.Errorf("namespaces are looked up by name only")
}
