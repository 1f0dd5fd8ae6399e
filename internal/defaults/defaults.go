package defaults

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/runtime"
)

// Known reports whether gvk is a built-in kind whose defaults Apply knows.
func Known(gvk schema.GroupVersionKind) bool {
	return gvk.Version != k8sruntime.APIVersionInternal && scheme.Recognizes(gvk)
}

// Apply returns obj as the API server hands a create of it to admission
// policies and webhooks, as far as defaulting goes: decoded into its typed
// versioned struct (fields the type does not have are dropped, as the API
// server drops them), defaulted by the release's generated defaulters,
// converted to the internal version and back, and made unstructured again.
// obj itself is not changed; a kind Known does not recognise is returned as
// it is.
//
// Nothing beyond the scheme runs: no metadata is invented (no uid,
// creationTimestamp, generation or managedFields), no registry strategy
// (PrepareForCreate: pod status, cleared status of workloads), no
// allocation (Service clusterIP, nodePort), no admission plugin
// (ServiceAccount, DefaultTolerationSeconds, LimitRanger, Priority, ...).
func Apply(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	if !Known(gvk) {
		return obj, nil
	}
	typed, err := scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return nil, fmt.Errorf("%s %s does not decode as the API server's %s: %v", gvk.Kind, name(obj), gvk.GroupVersion(), err)
	}
	scheme.Default(typed)
	versioned, err := roundTrip(typed, gvk)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", gvk.Kind, name(obj), err)
	}
	out, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(versioned)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", gvk.Kind, name(obj), err)
	}
	u := &unstructured.Unstructured{Object: out}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// roundTrip converts a defaulted versioned object to the internal version and
// back, as the API server does between decoding a request and handing the
// object to admission in the version a policy or webhook asked for.
func roundTrip(typed k8sruntime.Object, gvk schema.GroupVersionKind) (k8sruntime.Object, error) {
	internalGV := schema.GroupVersion{Group: gvk.Group, Version: k8sruntime.APIVersionInternal}
	internal, err := scheme.ConvertToVersion(typed, internalGV)
	if err != nil {
		return nil, fmt.Errorf("convert to the internal version: %w", err)
	}
	versioned, err := scheme.ConvertToVersion(internal, gvk.GroupVersion())
	if err != nil {
		return nil, fmt.Errorf("convert back to %s: %w", gvk.GroupVersion(), err)
	}
	return versioned, nil
}

// ApplyManifests applies Apply to every manifest and returns the defaulted
// manifests; the input is not changed. An error names the manifest.
func ApplyManifests(ms []runtime.Manifest) ([]runtime.Manifest, error) {
	out := make([]runtime.Manifest, len(ms))
	for i, m := range ms {
		obj, err := Apply(m.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot apply the API server's defaults: %w; fix the manifest, or judge it as written with --no-defaults", m.Source, err)
		}
		out[i] = runtime.Manifest{Source: m.Source, Object: obj}
	}
	return out, nil
}

func name(obj *unstructured.Unstructured) string {
	if obj.GetName() != "" {
		return obj.GetName()
	}
	return obj.GetGenerateName() + "*"
}
