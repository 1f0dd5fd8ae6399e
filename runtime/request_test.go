package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RequestFor hands policies the object as the API server does: a
// namespaced object carries the request's namespace in metadata.namespace,
// a cluster-scoped one has none, and the caller's object is not changed.
func TestRequestForNamespaces(t *testing.T) {
	obj := func(apiVersion, kind, ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "x"}}}
		if ns != "" {
			u.SetNamespace(ns)
		}
		return u
	}
	for _, c := range []struct {
		name, apiVersion, kind, objNS, flagNS, want string
	}{
		{"pod without a namespace", "v1", "Pod", "", "shop", "shop"},
		{"pod with its own namespace", "v1", "Pod", "team-a", "default", "team-a"},
		{"deployment", "apps/v1", "Deployment", "", "default", "default"},
		{"namespace", "v1", "Namespace", "", "shop", ""},
		{"cluster role", "rbac.authorization.k8s.io/v1", "ClusterRole", "", "shop", ""},
		{"admission policy", "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "default", ""},
		{"gatekeeper constraint", "constraints.gatekeeper.sh/v1beta1", "K8sRequiredLabels", "", "default", ""},
		{"a Role is namespaced", "rbac.authorization.k8s.io/v1", "Role", "", "shop", "shop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := obj(c.apiVersion, c.kind, c.objNS)
			req := RequestFor(in, nil, c.flagNS)
			assert.Equal(t, c.want, req.Namespace)
			assert.Equal(t, c.want, req.Object.GetNamespace())
			assert.Equal(t, c.objNS, in.GetNamespace(), "the caller's object is not changed")
		})
	}
}
