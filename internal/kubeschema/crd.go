package kubeschema

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/admitc/admitc/internal/apiresources"
)

// addCRD adds the versions a CRD serves: their resource (the CRD's group,
// plural, scope and subresources) and their schema.
func (r *Resolver) addCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	s := crd.Spec
	if s.Group == "" || s.Names.Kind == "" || s.Names.Plural == "" {
		return fmt.Errorf("CRD %q: a CustomResourceDefinition needs spec.group, spec.names.kind and spec.names.plural", crd.Name)
	}
	for _, v := range s.Versions {
		if !v.Served {
			continue
		}
		r.served = append(r.served, apiresources.Resource{
			Group: s.Group, Version: v.Name, Resource: s.Names.Plural, Kind: s.Names.Kind,
			Namespaced: s.Scope != apiextensionsv1.ClusterScoped, Preferred: v.Storage, Subresources: subresources(v.Subresources),
		})
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		root, err := specSchema(v.Schema.OpenAPIV3Schema)
		if err != nil {
			return fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
		}
		r.crds[schema.GroupVersionKind{Group: s.Group, Version: v.Name, Kind: s.Names.Kind}] = withObjectMeta(root)
	}
	return nil
}

// subresources names a CRD version's subresources, as discovery does.
func subresources(s *apiextensionsv1.CustomResourceSubresources) []string {
	var out []string
	if s != nil && s.Scale != nil {
		out = append(out, "scale")
	}
	if s != nil && s.Status != nil {
		out = append(out, "status")
	}
	return out
}

// specSchema converts a CRD's schema to the OpenAPI schema the built-in
// kinds have (the JSON of both is OpenAPI v3).
func specSchema(p *apiextensionsv1.JSONSchemaProps) (*spec.Schema, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	s := &spec.Schema{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, err
	}
	return s, nil
}

// withObjectMeta gives a custom resource's schema the metadata every
// object has, as the API server does: a CRD's schema may say only type:
// object there, or constrain metadata.name alone, and the object still has
// all of ObjectMeta.
func withObjectMeta(s *spec.Schema) *spec.Schema {
	pod, err := builtinSchema(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	if err != nil {
		return s
	}
	out := *s
	out.Properties = map[string]spec.Schema{}
	for k, v := range s.Properties {
		out.Properties[k] = v
	}
	out.Properties["metadata"] = pod.Properties["metadata"]
	for _, f := range []string{"apiVersion", "kind"} {
		if _, ok := out.Properties[f]; !ok {
			out.Properties[f] = *spec.StringProperty()
		}
	}
	return &out
}
