package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/runtime"
)

// unservedKinds is a cluster whose API server serves no parameter kind.
type unservedKinds struct{ *runtime.StaticState }

func (unservedKinds) Params(kind schema.GroupVersionKind) (runtime.ParamStore, error) {
	return nil, errors.New("failed to find resource referenced by paramKind: '" + kind.String() + "'")
}

func TestStaticStateNamespaces(t *testing.T) {
	s := &runtime.StaticState{NamespaceLabels: map[string]map[string]string{"shop": {"env": "prod"}}}
	ns, err := s.Namespace(context.Background(), "shop")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{corev1.LabelMetadataName: "shop", "env": "prod"}, ns.Labels)
	ns, err = s.Namespace(context.Background(), "elsewhere")
	require.NoError(t, err, "every namespace exists offline")
	assert.Equal(t, map[string]string{corev1.LabelMetadataName: "elsewhere"}, ns.Labels)
}

// TestPolicyParamsAsTheAPIServer: a policy in admitc's own format finds its
// parameter object through its implicit binding, with the API server's
// rules and wording.
func TestPolicyParamsAsTheAPIServer(t *testing.T) {
	e := engineFor(t, "params-policy.yaml")
	param := func(namespace string) []*unstructured.Unstructured {
		ms, err := runtime.ReadManifests([]string{examples + "params/registries-k8s.json"})
		require.NoError(t, err)
		ms[0].Object.SetNamespace(namespace)
		return []*unstructured.Unstructured{ms[0].Object}
	}
	cases := map[string]struct {
		params  []*unstructured.Unstructured
		cluster runtime.ClusterState
		want    []string
	}{
		"found in paramRef.namespace": {params: param("admission-system")},
		"in another namespace, not found": {params: param("shop"),
			want: []string{"[cc-admission-registries-param] failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"}},
		"a kind the cluster does not serve": {cluster: unservedKinds{&runtime.StaticState{}},
			want: []string{"[cc-admission-registries-param] failed to configure policy: failed to find resource referenced by paramKind: '/v1, Kind=ConfigMap'"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop")
			req.Params, req.Cluster = tc.params, tc.cluster
			assert.Equal(t, tc.want, admit(t, e, req).Denials())
		})
	}
}
