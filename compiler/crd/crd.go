// Package crd validates a custom resource as kube-apiserver validates a
// create of it against its CustomResourceDefinition: unknown fields refused
// (strict field validation), the schema's defaults applied, then the
// object's metadata, the OpenAPI schema (types, enums, patterns, bounds,
// required fields), embedded resources and list types (sets and maps)
// checked, with apiextensions-apiserver's own code. x-kubernetes-validations
// rules are not evaluated: New refuses a schema that has them, so a CRD
// that gains some is noticed instead of half checked.
//
// It imports only the Kubernetes API machinery and apiextensions-apiserver;
// frontends call it with their engine's CRDs.
package crd

import (
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Schema is one served version of a CRD, ready to validate objects.
type Schema struct {
	namespaced bool
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

// New builds the schema of version of crd as kube-apiserver's CRD handler
// builds it: converted to the internal version, made structural, defaults
// pruned.
func New(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version && crd.Spec.Versions[i].Served {
			v = &crd.Spec.Versions[i]
		}
	}
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("%s serves no version %s with a schema", crd.Name, version)
	}
	if hasRules(v.Schema.OpenAPIV3Schema) {
		return nil, fmt.Errorf("%s %s has x-kubernetes-validations rules, which this package does not evaluate", crd.Name, version)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("%s %s: convert the schema: %w", crd.Name, version, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s %s: not a structural schema: %w", crd.Name, version, err)
	}
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("%s %s: prune defaults: %w", crd.Name, version, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", crd.Name, version, err)
	}
	return &Schema{namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, structural: s, validator: validator}, nil
}

// Validate returns what kube-apiserver refuses in a create of obj (a JSON
// object: int64 and float64 numbers); obj is not changed. A namespaced
// object without a namespace is checked in "default", as kubectl sends it.
func (s *Schema) Validate(obj map[string]any) field.ErrorList {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	errs := unknownFields(structuralpruning.PruneWithOptions(u.Object, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}))
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s.structural)
	structuraldefaulting.Default(u.Object, s.structural)
	if s.namespaced && u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	if !s.namespaced {
		u.SetNamespace("")
	}
	errs = append(errs, validation.ValidateObjectMetaAccessor(u, s.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, s.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	return errs
}

// unknownFields are the errors of strict field validation for the fields
// pruning removed.
func unknownFields(paths []string) field.ErrorList {
	var errs field.ErrorList
	for _, p := range paths {
		errs = append(errs, &field.Error{Type: field.ErrorTypeForbidden, Field: p, BadValue: "", Detail: "unknown field: the CRD's schema has no such field (kube-apiserver's strict field validation refuses it)"})
	}
	return errs
}

// hasRules reports whether a schema or any schema under it has
// x-kubernetes-validations.
func hasRules(s *apiextensionsv1.JSONSchemaProps) bool {
	found := false
	Walk(s, func(p *apiextensionsv1.JSONSchemaProps) {
		found = found || len(p.XValidations) > 0
	})
	return found
}

// Walk calls fn on s and on every schema under it.
func Walk(s *apiextensionsv1.JSONSchemaProps, fn func(*apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	fn(s)
	for k, p := range s.Properties {
		Walk(&p, fn)
		s.Properties[k] = p
	}
	if s.Items != nil {
		Walk(s.Items.Schema, fn)
		for i := range s.Items.JSONSchemas {
			Walk(&s.Items.JSONSchemas[i], fn)
		}
	}
	if s.AdditionalProperties != nil {
		Walk(s.AdditionalProperties.Schema, fn)
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.OneOf, s.AnyOf} {
		for i := range list {
			Walk(&list[i], fn)
		}
	}
	Walk(s.Not, fn)
}

// StripDescriptions removes every description from a CRD's schemas: they
// take most of its bytes and no part in validation.
func StripDescriptions(crd *apiextensionsv1.CustomResourceDefinition) {
	for i := range crd.Spec.Versions {
		if v := crd.Spec.Versions[i].Schema; v != nil {
			Walk(v.OpenAPIV3Schema, func(p *apiextensionsv1.JSONSchemaProps) { p.Description = "" })
		}
	}
}
