// Package vap reads admissionregistration.k8s.io policies into the IR:
// ValidatingAdmissionPolicy and MutatingAdmissionPolicy with their bindings,
// in v1, v1beta1 and v1alpha1, decoded with the real API types and
// validated as kube-apiserver validates them (validate.go). It imports the
// IR, compiler/source, internal/apiconv, the API types and kube-apiserver's
// admissionregistration API packages (defaults, conversion, validation);
// never a backend or the runtime.
package vap

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// Group is the API group this frontend reads.
const Group = "admissionregistration.k8s.io"

// Type is the IR policy type of imported admission policies.
const Type = "admission-policy"

// Result is what one document holds: a policy, or a binding of the named
// policy.
type Result struct {
	Policy *ir.Policy
	// Binding and PolicyName are set for a binding document.
	Binding    *ir.Binding
	PolicyName string
}

// Kinds this frontend reads.
var Kinds = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}

// Read decodes one document of kind kind.
func Read(doc *source.Doc) (*Result, diag.Diagnostics) {
	gv, err := schema.ParseGroupVersion(doc.Field("apiVersion"))
	kind := doc.Field("kind")
	if err != nil || gv.Group != Group || gv.Version == runtime.APIVersionInternal {
		return nil, diag.Diagnostics{{Origin: doc.Origin(doc.Root, "apiVersion"), Message: "not an admissionregistration.k8s.io object"}}
	}
	obj, err := scheme.New(gv.WithKind(kind))
	if err != nil || !slices.Contains(Kinds, kind) {
		return nil, diag.Diagnostics{{Origin: doc.Origin(doc.Root, "kind"), Message: fmt.Sprintf("%s %s is not a kind admitc reads (it reads %s in v1, v1beta1 and v1alpha1)", gv, kind, strings.Join(Kinds, ", "))}}
	}
	if ds := doc.Decode(obj, "a "+kind); len(ds) > 0 {
		return nil, ds
	}
	if ds := validate(doc, obj, kind); len(ds) > 0 {
		return nil, ds
	}
	v1obj, err := toV1(obj, kind)
	if err != nil {
		return nil, diag.Diagnostics{{Origin: doc.Origin(doc.Root, ""), Message: err.Error()}}
	}
	r := &reader{doc: doc}
	var res *Result
	switch o := v1obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		res = &Result{Policy: r.validating(o)}
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		res = &Result{Binding: r.validatingBinding(o), PolicyName: o.Spec.PolicyName}
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		res = &Result{Policy: r.mutating(o)}
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		res = &Result{Binding: r.mutatingBinding(o), PolicyName: o.Spec.PolicyName}
	}
	return res, r.diags
}

// toV1 converts a v1beta1 or v1alpha1 object to v1: the fields admitc
// reads are the same in every version, so a JSON round trip is exact, and
// fields v1 lacks are refused by the strict decode of the source version.
func toV1(obj runtime.Object, kind string) (runtime.Object, error) {
	out, err := scheme.New(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
	if err != nil {
		return nil, err
	}
	if err := roundTrip(obj, out); err != nil {
		return nil, fmt.Errorf("convert %s to admissionregistration.k8s.io/v1: %w", kind, err)
	}
	return out, nil
}
