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
	data, err := crdJSON()
	if err != nil {
		return nil, err
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	return crds, json.Unmarshal(data, &crds)
}

// crdJSON is the JSON list of the embedded CRDs.
func crdJSON() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(crdData))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// crdSchemas holds the schemas of the embedded CRDs' versions, each built
// the first time a document of its kind and version is read: a run that
// reads only ClusterPolicies builds only theirs.
var crdSchemas struct {
	mu sync.Mutex
	// crds are the embedded CRDs, each decoded when a document of its
	// kind is first read.
	crds    []json.RawMessage
	schemas map[schema.GroupVersionKind]*crd.Schema
}

// embeddedCRDsRaw is the embedded CRDs, undecoded.
func embeddedCRDsRaw() ([]json.RawMessage, error) {
	data, err := crdJSON()
	if err != nil {
		return nil, err
	}
	var crds []json.RawMessage
	return crds, json.Unmarshal(data, &crds)
}

// crdSchema is the schema of gvk's version of an embedded CRD; nil when no
// embedded CRD defines that kind and version.
func crdSchema(gvk schema.GroupVersionKind) (*crd.Schema, error) {
	crdSchemas.mu.Lock()
	defer crdSchemas.mu.Unlock()
	if s, ok := crdSchemas.schemas[gvk]; ok {
		return s, nil
	}
	if crdSchemas.crds == nil {
		crds, err := embeddedCRDsRaw()
		if err != nil {
			return nil, fmt.Errorf("read Kyverno's CRDs: %w", err)
		}
		crdSchemas.crds, crdSchemas.schemas = crds, map[schema.GroupVersionKind]*crd.Schema{}
	}
	for _, raw := range crdSchemas.crds {
		var names struct {
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &names); err != nil {
			return nil, fmt.Errorf("read Kyverno's CRDs: %w", err)
		}
		if names.Spec.Group != gvk.Group || names.Spec.Names.Kind != gvk.Kind {
			continue
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("read Kyverno's CRDs: %w", err)
		}
		for _, v := range c.Spec.Versions {
			if v.Name != gvk.Version {
				continue
			}
			s, err := crd.New(c, v.Name)
			if err != nil {
				return nil, err
			}
			crdSchemas.schemas[gvk] = s
			return s, nil
		}
	}
	crdSchemas.schemas[gvk] = nil
	return nil, nil
}

// ForgetCRDSchemas drops the CRDs and the schemas built from them (about
// 15 MB once every kind was read): a long run that compiled its policies
// and reads no more until a reload (audit, serve) need not keep them. They
// are built again when asked for.
func ForgetCRDSchemas() {
	crdSchemas.mu.Lock()
	defer crdSchemas.mu.Unlock()
	crdSchemas.crds, crdSchemas.schemas = nil, nil
}

// crdErrors are what kube-apiserver refuses in the document by its CRD's
// schema (enums such as validationFailureAction's and failureAction's,
// with their case; types, bounds, sets): Kyverno's policies are custom
// resources, so the API server checks them before Kyverno's webhook sees
// them.
func crdErrors(doc *source.Doc, gvk schema.GroupVersionKind) diag.Diagnostics {
	s, err := crdSchema(gvk)
	if err != nil {
		return diag.Diagnostics{{Origin: doc.Origin(doc.Root, ""), Message: err.Error()}}
	}
	if s == nil {
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
