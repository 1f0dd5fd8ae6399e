// Package mapbackend emits a MutatingAdmissionPolicy and a
// MutatingAdmissionPolicyBinding for every mutating policy of the IR:
// admissionregistration.k8s.io/v1 for Kubernetes 1.36 and newer, v1beta1
// for 1.34 and 1.35. It imports ir, backends and k8s.io/api only.
package mapbackend

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

var (
	// MinKubeVersion is the first release serving MutatingAdmissionPolicy by default (beta).
	MinKubeVersion = version.MajorMinor(1, 34)
	// GAKubeVersion is the first release serving admissionregistration.k8s.io/v1 MutatingAdmissionPolicy.
	GAKubeVersion = version.MajorMinor(1, 36)
)

// Backend is the MutatingAdmissionPolicy backend.
type Backend struct{}

var _ backends.Backend = Backend{}

// Name implements backends.Backend.
func (Backend) Name() string { return "map" }

// Rejects implements backends.Backend: mutating policies only.
func (Backend) Rejects(p *ir.Policy) string {
	if p.Kind != ir.Mutating {
		return "a MutatingAdmissionPolicy does not validate (add --backend vap, webhook or kyverno)"
	}
	return backends.APIServerRejects(p)
}

// Generate implements backends.Backend.
func (Backend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	var out backends.Output
	var diags diag.Diagnostics
	kv := opts.KubeVersion
	if kv == nil {
		kv = GAKubeVersion
	}
	for _, p := range backends.ByKind(set, ir.Mutating) {
		if kv.LessThan(MinKubeVersion) {
			diags = append(diags, backends.Errorf(p.Origin, "MutatingAdmissionPolicy needs Kubernetes %s or newer (beta, on by default), --kube-version is %s; use the webhook backend for older clusters", MinKubeVersion, kv))
			continue
		}
		if ds := backends.UnresolvedKinds(p); len(ds) > 0 {
			diags = append(diags, ds...)
			continue
		}
		p, ds := backends.ForAPIServer(p, kv)
		if len(ds) > 0 {
			diags = append(diags, ds...)
			continue
		}
		policy, bindings := Policy(p), Bindings(p, opts.Namespaces)
		if kv.LessThan(GAKubeVersion) {
			objs, err := toV1beta1(policy, bindings)
			if err != nil {
				diags = append(diags, backends.Errorf(p.Origin, "%v", err))
				continue
			}
			out.Objects = append(out.Objects, objs...)
			continue
		}
		out.Objects = append(out.Objects, policy)
		for _, b := range bindings {
			out.Objects = append(out.Objects, b)
		}
	}
	return out, diags
}

// Policy returns the v1 MutatingAdmissionPolicy for p.
func Policy(p *ir.Policy) *admissionregistrationv1.MutatingAdmissionPolicy {
	rp := admissionregistrationv1.ReinvocationPolicyType(p.ReinvocationPolicy)
	spec := admissionregistrationv1.MutatingAdmissionPolicySpec{
		MatchConstraints:   backends.Constraints(p),
		FailurePolicy:      backends.FailurePolicy(p.FailurePolicy),
		ReinvocationPolicy: rp,
		MatchConditions:    backends.MatchConditions(p.MatchConditions),
	}
	if p.ParamKind != nil {
		spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: p.ParamKind.APIVersion, Kind: p.ParamKind.Kind}
	}
	spec.Variables = backends.Variables(p.Variables)
	for _, m := range p.Mutations {
		if m.PatchType == ir.ApplyConfiguration {
			spec.Mutations = append(spec.Mutations, admissionregistrationv1.Mutation{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: m.Expression},
			})
			continue
		}
		spec.Mutations = append(spec.Mutations, admissionregistrationv1.Mutation{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: m.Expression},
		})
	}
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: backends.Labels()},
		Spec:       spec,
	}
}

// Bindings returns the v1 MutatingAdmissionPolicyBindings of p.
func Bindings(p *ir.Policy, namespaces []string) []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
	var out []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, b := range backends.Bindings(p, namespaces) {
		out = append(out, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: b.Name, Labels: backends.Labels()},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
				PolicyName: p.Name, ParamRef: b.ParamRef, MatchResources: b.MatchResources,
			},
		})
	}
	return out
}

// toV1beta1 converts the v1 objects to v1beta1, whose MutatingAdmissionPolicy
// schema is the same; the conversion goes through JSON so no field is missed.
func toV1beta1(policy *admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) ([]runtime.Object, error) {
	gv := admissionregistrationv1beta1.SchemeGroupVersion.String()
	p := &admissionregistrationv1beta1.MutatingAdmissionPolicy{}
	if err := convert(policy, p); err != nil {
		return nil, err
	}
	p.APIVersion = gv
	out := []runtime.Object{p}
	for _, binding := range bindings {
		b := &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{}
		if err := convert(binding, b); err != nil {
			return nil, err
		}
		b.APIVersion = gv
		out = append(out, b)
	}
	return out, nil
}
