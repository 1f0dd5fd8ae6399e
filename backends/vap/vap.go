// Package vap emits a ValidatingAdmissionPolicy and a
// ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1) for
// every validating policy of the IR. It imports ir, backends and
// k8s.io/api only.
package vap

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// MinKubeVersion is the first release with ValidatingAdmissionPolicy GA.
var MinKubeVersion = version.MajorMinor(1, 30)

// Backend is the ValidatingAdmissionPolicy backend.
type Backend struct{}

var _ backends.Backend = Backend{}

// Name implements backends.Backend.
func (Backend) Name() string { return "vap" }

// Rejects implements backends.Backend: a ValidatingAdmissionPolicy cannot
// change an object, so mutating policies are left to other backends (and
// reported when no selected backend takes them).
func (Backend) Rejects(p *ir.Policy) string {
	if p.Kind != ir.Validating {
		return "a ValidatingAdmissionPolicy cannot change objects (add --backend map, webhook or kyverno)"
	}
	return backends.APIServerRejects(p)
}

// Generate implements backends.Backend: a policy and a binding per
// validating policy, in IR order.
func (Backend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	var out backends.Output
	var diags diag.Diagnostics
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Kind != ir.Validating {
			continue
		}
		if opts.KubeVersion != nil && opts.KubeVersion.LessThan(MinKubeVersion) {
			diags = append(diags, backends.Errorf(p.Origin, "ValidatingAdmissionPolicy needs Kubernetes %s or newer, --kube-version is %s", MinKubeVersion, opts.KubeVersion))
			continue
		}
		if ds := backends.UnresolvedKinds(p); len(ds) > 0 {
			diags = append(diags, ds...)
			continue
		}
		p, ds := backends.ForAPIServer(p, opts.KubeVersion)
		if len(ds) > 0 {
			diags = append(diags, ds...)
			continue
		}
		out.Objects = append(out.Objects, Policy(p))
		for _, b := range Bindings(p, opts.Namespaces) {
			out.Objects = append(out.Objects, b)
		}
	}
	return out, diags
}

// Policy returns the ValidatingAdmissionPolicy for p.
func Policy(p *ir.Policy) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(p),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        paramKind(p),
			MatchConstraints: backends.Constraints(p),
			Validations:      backends.Validations(p.Validations),
			FailurePolicy:    backends.FailurePolicy(p.FailurePolicy),
			AuditAnnotations: backends.AuditAnnotations(p.AuditAnnotations),
			MatchConditions:  backends.MatchConditions(p.MatchConditions),
			Variables:        backends.Variables(p.Variables),
		},
	}
}

// Bindings returns the ValidatingAdmissionPolicyBindings of p.
func Bindings(p *ir.Policy, namespaces []string) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	var out []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range backends.Bindings(p, namespaces) {
		out = append(out, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: b.Name, Labels: backends.Labels()},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: p.Name, ParamRef: b.ParamRef, MatchResources: b.MatchResources, ValidationActions: b.Actions,
			},
		})
	}
	return out
}

func objectMeta(p *ir.Policy) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: p.Name, Labels: backends.Labels()}
}

func paramKind(p *ir.Policy) *admissionregistrationv1.ParamKind {
	if p.ParamKind == nil {
		return nil
	}
	return &admissionregistrationv1.ParamKind{APIVersion: p.ParamKind.APIVersion, Kind: p.ParamKind.Kind}
}
