package upstream

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server defaults policy objects before the plugins see them; the
// plugins fail without it ("a nil namespace selector was passed"). These
// are the defaults of k8s.io/kubernetes/pkg/apis/admissionregistration/v1.

func defaultMatch(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		p := admissionregistrationv1.Equivalent
		m.MatchPolicy = &p
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		if m.ResourceRules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			m.ResourceRules[i].Scope = &s
		}
	}
}

func defaultFailure(f **admissionregistrationv1.FailurePolicyType) {
	if *f == nil {
		fp := admissionregistrationv1.Fail
		*f = &fp
	}
}

func defaultVAP(p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
	defaultFailure(&p.Spec.FailurePolicy)
	defaultMatch(p.Spec.MatchConstraints)
	return p
}

func defaultVAPB(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	if b.Spec.MatchResources == nil {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	}
	defaultMatch(b.Spec.MatchResources)
	return b
}

func defaultMAP(p *admissionregistrationv1.MutatingAdmissionPolicy) *admissionregistrationv1.MutatingAdmissionPolicy {
	defaultFailure(&p.Spec.FailurePolicy)
	defaultMatch(p.Spec.MatchConstraints)
	if p.Spec.ReinvocationPolicy == "" {
		p.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
	}
	return p
}

func defaultMAPB(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	if b.Spec.MatchResources == nil {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	}
	defaultMatch(b.Spec.MatchResources)
	return b
}
