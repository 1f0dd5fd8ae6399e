package verify

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The value kyverno test's context holds for an apiCall entry: the global
// values, then the rule's (an autogen rule's too), maps merged as
// Kyverno's mergeMaps merges them, dotted keys pushed into maps; none
// where it depends on the resource or on Go's map order.
func TestAPICallValuesAsTheCLIPutsThem(t *testing.T) {
	read := func(doc string) *kyvernoSuite {
		var v valuesFile
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &v))
		return &kyvernoSuite{values: &v.valuesSpec}
	}
	s := read(`
globalValues:
  ns.metadata.labels.tier: frozen
  podcount: 3
policies:
- name: p
  rules:
  - name: r
    values:
      ns: {metadata: {labels: {owner: team-a}}}
      podcount: 12
- name: per-resource
  resources:
  - name: web
    values: {ns: {}}
`)
	v, ok := s.apiCallValue("p", "r", "ns")
	require.True(t, ok)
	assert.Equal(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "frozen", "owner": "team-a"}}}, v)
	v, ok = s.apiCallValue("p", "autogen-cronjob-r", "podcount")
	require.True(t, ok)
	assert.Equal(t, float64(12), v, "the rule's value replaces the global one, through JSON")
	v, ok = s.apiCallValue("p", "other", "podcount")
	require.True(t, ok)
	assert.Equal(t, float64(3), v)
	_, ok = s.apiCallValue("p", "r", "missing")
	assert.False(t, ok)
	_, ok = s.apiCallValue("per-resource", "r", "ns")
	assert.False(t, ok, "a value per resource is not one constant")

	s = read(`
globalValues:
  ns: {kind: Namespace}
  ns.metadata.name: a
`)
	_, ok = s.apiCallValue("p", "r", "ns")
	assert.False(t, ok, "two global keys of one entry merge in Go's map order")
	_, ok = (&kyvernoSuite{}).apiCallValue("p", "r", "ns")
	assert.False(t, ok)
}

// With clusterResources kyverno test calls its fake cluster for an apiCall
// entry, which admitc does not: the rule is unsupported, with the reason,
// even where the values give the entry.
func TestAPICallWithClusterResourcesIsRefused(t *testing.T) {
	dir := t.TempDir()
	src := "testdata/apicall-values"
	for _, f := range []string{"policy.yaml", "resources.yaml", "values.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), data, 0o644))
	}
	test, err := os.ReadFile(filepath.Join(src, "kyverno-test.yaml"))
	require.NoError(t, err)
	test = append(test, []byte("clusterResources:\n- cluster.yaml\n")...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kyverno-test.yaml"), test, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(`apiVersion: cli.kyverno.io/v1alpha1
kind: ClusterResource
metadata:
  name: cluster
spec:
  resources:
  - apiVersion: v1
    kind: Namespace
    metadata:
      name: storefront
  - apiVersion: v1
    kind: Namespace
    metadata:
      name: default
`), 0o644))

	rep, err := Run(context.Background(), []string{src}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 14, rep.Summary.Passed, "the fixture passes as kyverno test does (make kyverno-cli)")

	rep, err = Run(context.Background(), []string{dir}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Summary.Passed)
	require.NotEmpty(t, rep.Results)
	assert.Equal(t, 14, rep.Summary.Unsupported)
	assert.Contains(t, rep.Results[0].Reason, "context.apiCall: Kyverno loads this context entry from the API server")
}
