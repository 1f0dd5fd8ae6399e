package compiler_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
)

// What ForgetCaches drops is built again by the next compile, which
// compiles to the same set; a broken ClusterPolicy is still refused by
// Kyverno's CRD schema.
func TestCompileAfterForgetCachesIsTheSame(t *testing.T) {
	data, err := os.ReadFile("../examples/kyverno-pattern/podsecurity-baseline/policy.yaml")
	require.NoError(t, err)
	src := []compiler.Source{{Name: "policy.yaml", Data: data}}
	first, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	compiler.ForgetCaches()
	again, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	assert.Equal(t, first, again)

	compiler.ForgetCaches()
	broken := []compiler.Source{{Name: "broken.yaml", Data: []byte(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  validationFailureAction: Block
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: no
      deny: {}
`)}}
	_, diags = compiler.Compile(broken, compiler.Options{})
	require.NotEmpty(t, diags)
	assert.Contains(t, diags.Error(), "spec.validationFailureAction")
	assert.Contains(t, diags.Error(), "Kyverno's CRD schema")
}
