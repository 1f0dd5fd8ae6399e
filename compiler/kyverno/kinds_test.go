package kyverno_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
)

// crdFixtures are the published CRDs of the golden corpus, trimmed:
// cert-manager's Certificate and Flux's HelmRelease.
const crdFixtures = "../../golden/testdata/crds"

func readCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := compiler.ReadCRDs([]string{crdFixtures})
	require.NoError(t, err)
	return crds
}

// kindPolicy is a pattern rule on the kinds entry KIND.
const kindPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: certs
spec:
  validationFailureAction: Enforce
  rules:
  - name: ecdsa
    match:
      any:
      - resources:
          kinds:
          - KIND
    validate:
      message: ECDSA keys only
      pattern:
        spec:
          privateKey:
            algorithm: ECDSA
`

func compileKind(t *testing.T, kind string, crds []*apiextensionsv1.CustomResourceDefinition) ir.Policy {
	t.Helper()
	src := compiler.Source{Name: "policy.yaml", Data: []byte(strings.Replace(kindPolicy, "KIND", kind, 1))}
	set, diags := compiler.Compile([]compiler.Source{src}, compiler.Options{CRDs: crds})
	require.Empty(t, diags.Error())
	require.NotEmpty(t, set.Policies)
	return set.Policies[0]
}

func TestKindsResolveThroughTheCRDsGiven(t *testing.T) {
	crds := readCRDs(t)
	ops := []ir.Operation{ir.Create, ir.Update, ir.Connect}
	certificates := []ir.ResourceRule{{APIGroups: []string{"cert-manager.io"}, APIVersions: []string{"v1"}, Resources: []string{"certificates"}, Operations: ops, Scope: "Namespaced"}}
	for _, tc := range []struct {
		kind string
		want []ir.ResourceRule
	}{
		{"Certificate", certificates},
		{"cert-manager.io/v1/Certificate", certificates},
		{"cert-manager.io/*/Certificate", certificates},
		{`"*/Certificate"`, certificates},
		{"v1/Certificate", certificates},
		{"Certificate/status", []ir.ResourceRule{{APIGroups: []string{"cert-manager.io"}, APIVersions: []string{"v1"}, Resources: []string{"certificates/status"}, Operations: ops, Scope: "Namespaced"}}},
		{"HelmRelease", []ir.ResourceRule{{APIGroups: []string{"helm.toolkit.fluxcd.io"}, APIVersions: []string{"v2", "v2beta2"}, Resources: []string{"helmreleases"}, Operations: ops, Scope: "Namespaced"}}},
		{"helm.toolkit.fluxcd.io/v2beta2/HelmRelease", []ir.ResourceRule{{APIGroups: []string{"helm.toolkit.fluxcd.io"}, APIVersions: []string{"v2beta2"}, Resources: []string{"helmreleases"}, Operations: ops, Scope: "Namespaced"}}},
		{"Pod", []ir.ResourceRule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/ephemeralcontainers"}, Operations: ops, Scope: "*"}}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			p := compileKind(t, tc.kind, crds)
			assert.Equal(t, tc.want, p.MatchConstraints.ResourceRules)
			assert.Empty(t, p.UnresolvedKinds)
		})
	}
}

func TestKindWithoutItsCRDIsAGuessWithItsPlace(t *testing.T) {
	p := compileKind(t, "Certificate", nil)
	assert.Equal(t, []ir.ResourceRule{{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"certificates"}, Operations: []ir.Operation{ir.Create, ir.Update, ir.Connect}, Scope: "*"}},
		p.MatchConstraints.ResourceRules, "the runtime matches the guess, as before")
	assert.Equal(t, []ir.UnresolvedKind{{Kind: "Certificate", Origin: ir.Origin{File: "policy.yaml", Line: 13, Column: 13, Path: "spec.rules[0].match.any[0].resources.kinds[0]"}}}, p.UnresolvedKinds)

	legacy := strings.Replace(kindPolicy, "      any:\n      - resources:\n          kinds:\n          - KIND", "      resources:\n        kinds: [Pod, Widget]", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "legacy.yaml", Data: []byte(legacy)}}, compiler.Options{})
	require.Empty(t, diags.Error())
	assert.Equal(t, []ir.UnresolvedKind{{Kind: "Widget", Origin: ir.Origin{File: "legacy.yaml", Line: 11, Column: 22, Path: "spec.rules[0].match.resources.kinds[1]"}}}, set.Policies[0].UnresolvedKinds)

	for _, wildcard := range []string{"'*'", "Cert*", "cert-manager.io/v1*/Certificate"} {
		assert.Empty(t, compileKind(t, wildcard, nil).UnresolvedKinds, "%s: a wildcard says what it means", wildcard)
	}
}

func TestPatternOnACRDKindIsTypedAgainstItsSchema(t *testing.T) {
	typed := compileKind(t, "Certificate", readCRDs(t))
	require.NotNil(t, typed.Dynamic, "the exact dynamic form is kept for objects of another shape")
	require.Len(t, typed.Validations, 1)
	assert.Equal(t, `object.?spec.?privateKey.?algorithm.orValue("") == "ECDSA" || request.operation == "UPDATE" && oldObject.?spec.?privateKey.?algorithm.orValue("") != "ECDSA"`,
		typed.Validations[0].Expression, "the CRD's schema fixes spec and privateKey as objects, algorithm as a string: no type tests")
	assert.Equal(t, []ir.SchemaRead{{Path: "spec", Shape: "object"}, {Path: "spec.privateKey", Shape: "object"}, {Path: "spec.privateKey.algorithm", Shape: "string"}}, typed.SchemaReads)

	dynamic := compileKind(t, "Certificate", nil)
	assert.Nil(t, dynamic.Dynamic)
	assert.Empty(t, dynamic.SchemaReads)
	assert.Contains(t, dynamic.Variables[0].Expression, "type(object) == map", "without the CRD nothing fixes the object's shape")
}

// helmReleasePolicy has a rule on a field the CRD types and one under
// spec.values, which the CRD keeps as given
// (x-kubernetes-preserve-unknown-fields).
const helmReleasePolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: helm
spec:
  validationFailureAction: Enforce
  rules:
  - name: suspend
    match:
      any:
      - resources:
          kinds: [HelmRelease]
    validate:
      pattern:
        spec:
          =(suspend): false
  - name: values
    match:
      any:
      - resources:
          kinds: [HelmRelease]
    validate:
      pattern:
        spec:
          values:
            replicaCount: ">1"
`

func TestPreserveUnknownFieldsKeepsTheDynamicForm(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "helm.yaml", Data: []byte(helmReleasePolicy)}}, compiler.Options{CRDs: readCRDs(t)})
	require.Empty(t, diags.Error())
	require.Len(t, set.Policies, 2)
	suspend, values := set.Policies[0], set.Policies[1]
	assert.Equal(t, []ir.SchemaRead{{Path: "spec", Shape: "object"}, {Path: "spec.suspend", Shape: "boolean"}}, suspend.SchemaReads, "spec.suspend is a boolean in v2 and v2beta2")
	assert.NotContains(t, suspend.Validations[0].Expression, "type(")
	assert.Empty(t, values.SchemaReads, "spec.values holds whatever Helm values are given")
	assert.Nil(t, values.Dynamic)
	assert.Contains(t, values.Variables[0].Expression, "type(x2) == map", "the dynamic form tests what spec.values holds")
}
