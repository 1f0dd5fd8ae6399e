package gatekeeper

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

const (
	// TemplateGroup is the API group of ConstraintTemplates.
	TemplateGroup = "templates.gatekeeper.sh"
	// ConstraintGroup is the API group of Constraints.
	ConstraintGroup = "constraints.gatekeeper.sh"
	// ParamAPIVersion is the apiVersion of constraints as parameter objects
	// (the version Gatekeeper's own generated policies name).
	ParamAPIVersion = ConstraintGroup + "/v1beta1"
	// Type is the IR policy type of a ConstraintTemplate.
	Type = "gatekeeper-template"
	// Target is the admission target a template must name.
	Target = "admission.k8s.gatekeeper.sh"
	// CELEngine is the code engine admitc reads.
	CELEngine = "K8sNativeValidation"
	// RegoOnly starts the message of a template admitc cannot run because
	// it has Rego and no CEL.
	RegoOnly = "Rego is not translated"
)

// Result is what one document holds: a template's policy, or a constraint's
// binding of the template whose CRD kind is ConstraintKind.
type Result struct {
	Policy         *ir.Policy
	Binding        *ir.Binding
	ConstraintKind string
}

// Read decodes one templates.gatekeeper.sh or constraints.gatekeeper.sh
// document.
func Read(doc *source.Doc) (*Result, diag.Diagnostics) {
	gv, err := schema.ParseGroupVersion(doc.Field("apiVersion"))
	r := &reader{doc: doc}
	switch {
	case err == nil && gv.Group == TemplateGroup:
		if doc.Field("kind") != "ConstraintTemplate" || (gv.Version != "v1" && gv.Version != "v1beta1") {
			r.errorf("kind", "admitc reads %s/v1 and v1beta1 ConstraintTemplate, not %s %s", TemplateGroup, gv, doc.Field("kind"))
			return nil, r.diags
		}
		p := r.template()
		return &Result{Policy: p}, r.diags
	case err == nil && gv.Group == ConstraintGroup:
		if gv.Version != "v1beta1" && gv.Version != "v1alpha1" && gv.Version != "v1" {
			r.errorf("apiVersion", "admitc reads constraints in %s v1, v1beta1 and v1alpha1, not %s", ConstraintGroup, gv.Version)
			return nil, r.diags
		}
		b := r.constraint()
		return &Result{Binding: b, ConstraintKind: doc.Field("kind")}, r.diags
	}
	r.errorf("apiVersion", "not a Gatekeeper object")
	return nil, r.diags
}

type reader struct {
	doc   *source.Doc
	diags diag.Diagnostics
}

// origin is the origin of the field at path, or of the document.
func (r *reader) origin(path string) ir.Origin {
	if n := r.doc.NodeAt(path); n != nil {
		return r.doc.Origin(n, path)
	}
	return r.doc.Origin(r.doc.Root, path)
}

func (r *reader) errorf(path, format string, args ...any) {
	r.diags = append(r.diags, diag.Diagnostic{Origin: r.origin(path), Message: fmt.Sprintf(format, args...)})
}

// TemplateKind is the constraint kind a ConstraintTemplate document names
// (spec.crd.spec.names.kind), or "".
func TemplateKind(doc *source.Doc) string {
	if n := doc.NodeAt("spec.crd.spec.names.kind"); n != nil {
		return n.Value
	}
	return ""
}
