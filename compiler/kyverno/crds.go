package kyverno

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/compiler/crd"
	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/diag"
)

// CRDFiles are the CustomResourceDefinitions of the kinds this frontend
// reads, as Kyverno's module ships them under config/crds; crds/crds.json.gz
// holds them without descriptions (TestEmbeddedCRDsAreKyvernos keeps it
// equal to the module go.mod names; go test ./compiler/kyverno -run
// TestEmbeddedCRDs -update-crds rewrites it).
var CRDFiles = []string{
	"kyverno/kyverno.io_clusterpolicies.yaml",
	"kyverno/kyverno.io_policies.yaml",
	"policies.kyverno.io/policies.kyverno.io_validatingpolicies.yaml",
	"policies.kyverno.io/policies.kyverno.io_namespacedvalidatingpolicies.yaml",
	"policies.kyverno.io/policies.kyverno.io_mutatingpolicies.yaml",
}

//go:embed crds/crds.json.gz
var crdData []byte

// EmbeddedCRDs returns the CRDs of CRDFiles that admitc carries, in order.
func EmbeddedCRDs() ([]apiextensionsv1.CustomResourceDefinition, error) {
	zr, err := gzip.NewReader(bytes.NewReader(crdData))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	return crds, json.Unmarshal(data, &crds)
}

// crdSchemas are the schemas of every served version of the embedded CRDs,
// built once.
var crdSchemas = sync.OnceValues(func() (map[schema.GroupVersionKind]*crd.Schema, error) {
	crds, err := EmbeddedCRDs()
	if err != nil {
		return nil, fmt.Errorf("read Kyverno's CRDs: %w", err)
	}
	out := map[schema.GroupVersionKind]*crd.Schema{}
	for i := range crds {
		c := &crds[i]
		for _, v := range c.Spec.Versions {
			s, err := crd.New(c, v.Name)
			if err != nil {
				return nil, err
			}
			out[schema.GroupVersionKind{Group: c.Spec.Group, Version: v.Name, Kind: c.Spec.Names.Kind}] = s
		}
	}
	return out, nil
})

// crdErrors are what kube-apiserver refuses in the document by its CRD's
// schema (enums such as validationFailureAction's and failureAction's,
// with their case; types, bounds, sets): Kyverno's policies are custom
// resources, so the API server checks them before Kyverno's webhook sees
// them.
func crdErrors(doc *source.Doc, gvk schema.GroupVersionKind) diag.Diagnostics {
	schemas, err := crdSchemas()
	if err != nil {
		return diag.Diagnostics{{Origin: doc.Origin(doc.Root, ""), Message: err.Error()}}
	}
	s, ok := schemas[gvk]
	if !ok {
		return nil
	}
	obj, err := doc.Object()
	if err != nil {
		return diag.Diagnostics{{Origin: doc.Origin(doc.Root, ""), Message: err.Error()}}
	}
	return doc.FieldErrors(s.Validate(obj), source.Refusal{By: "the API server refuses this " + gvk.Kind + " by Kyverno's CRD schema", Fixes: crdFixes})
}

// crdFixes is the advice for the fields whose schema message does not say
// what to write.
var crdFixes = map[string]string{
	"spec.validationFailureAction":                            "say Enforce to block, Audit to report",
	"spec.rules[*].validate.failureAction":                    "say Enforce to block, Audit to report",
	"spec.validationFailureActionOverrides[*].action":         "say Enforce to block, Audit to report",
	"spec.rules[*].validate.failureActionOverrides[*].action": "say Enforce to block, Audit to report",
	"spec.validationActions[*]":                               "write Deny, Warn or Audit, capitalised, each once",
}
