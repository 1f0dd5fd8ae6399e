package kyverno

import (
	kpolv1 "github.com/kyverno/api/api/policies.kyverno.io/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// CELBackend emits the CEL policy types that replace ClusterPolicy
// (policies.kyverno.io/v1 ValidatingPolicy and MutatingPolicy): the IR's CEL
// as it is, so Kyverno, the API server and admitc evaluate the same
// expressions. admitc's own policies have autogen off because they already
// name every workload kind and pick the pod spec by kind. An imported
// policy (a ClusterPolicy's rule, a ValidatingPolicy, an admission policy)
// becomes its successor (see Successors): with Kyverno's autogen when
// Autogen accepts it, else with every autogen rule written out.
type CELBackend struct {
	// Autogen checks the idiomatic autogen form; nil writes autogen out.
	Autogen AutogenCheck
}

var _ backends.Backend = CELBackend{}

// Name implements backends.Backend.
func (CELBackend) Name() string { return "kyverno-cel" }

// Rejects implements backends.Backend: Kyverno's CEL policies have no
// paramKind.
func (CELBackend) Rejects(p *ir.Policy) string {
	if p.Imported() {
		return successorRefusal(p)
	}
	if p.ParamKind != nil {
		return "Kyverno's ValidatingPolicy has no paramKind (use --backend kyverno or vap)"
	}
	return ""
}

// Generate implements backends.Backend.
func (b CELBackend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	var out backends.Output
	var diags diag.Diagnostics
	for _, t := range Successors(set, b.Autogen) {
		for _, s := range t.Successors {
			out.Objects = append(out.Objects, s.Object)
		}
	}
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.ParamKind != nil || p.Imported() {
			continue // reported by the pipeline's coverage check
		}
		var obj runtime.Object = validatingPolicy(p, opts.Namespaces)
		if p.Kind == ir.Mutating {
			obj = mutatingPolicy(p, opts.Namespaces)
		}
		obj, err := cleaned(obj)
		if err != nil {
			diags = append(diags, backends.Errorf(p.Origin, "%v", err))
			continue
		}
		noAutogen(obj.(*unstructured.Unstructured))
		out.Objects = append(out.Objects, obj)
	}
	return out, diags
}

// noAutogen sets autogen.podControllers.controllers to an empty list: the
// policies match the workload kinds themselves, and Kyverno must not copy a
// Pod-only policy to controllers that admitc and the API server would not
// judge. (The Go field is omitempty, so the empty list is set on the map.)
func noAutogen(u *unstructured.Unstructured) {
	_ = unstructured.SetNestedSlice(u.Object, []any{}, "spec", "autogen", "podControllers", "controllers")
}

func matchConstraints(p *ir.Policy, namespaces []string) *admissionregistrationv1.MatchResources {
	mr := backends.MatchResources(backends.RulesFor([]*ir.Policy{p}, true))
	mr.NamespaceSelector = backends.NamespaceSelector(namespaces)
	return mr
}

func validatingPolicy(p *ir.Policy, namespaces []string) *kpolv1.ValidatingPolicy {
	actions := make([]admissionregistrationv1.ValidationAction, len(p.Actions))
	for i, a := range p.Actions {
		actions[i] = admissionregistrationv1.ValidationAction(a)
	}
	return &kpolv1.ValidatingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: kpolv1.SchemeGroupVersion.String(), Kind: "ValidatingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: backends.Labels()},
		Spec: kpolv1.ValidatingPolicySpec{
			MatchConstraints: matchConstraints(p, namespaces),
			Validations:      backends.Validations(p.Validations),
			FailurePolicy:    backends.FailurePolicy(p.FailurePolicy),
			AuditAnnotations: backends.AuditAnnotations(p.AuditAnnotations),
			MatchConditions:  backends.MatchConditions(p.MatchConditions),
			Variables:        backends.Variables(p.Variables),
			ValidationAction: actions,
		},
	}
}

func mutatingPolicy(p *ir.Policy, namespaces []string) *kpolv1.MutatingPolicy {
	spec := kpolv1.MutatingPolicySpec{
		MatchConstraints:   matchConstraints(p, namespaces),
		FailurePolicy:      backends.FailurePolicy(p.FailurePolicy),
		MatchConditions:    backends.MatchConditions(p.MatchConditions),
		Variables:          backends.Variables(p.Variables),
		ReinvocationPolicy: admissionregistrationv1.ReinvocationPolicyType(p.ReinvocationPolicy),
	}
	for _, m := range p.Mutations {
		spec.Mutations = append(spec.Mutations, admissionregistrationv1alpha1.Mutation{
			PatchType: admissionregistrationv1alpha1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1alpha1.JSONPatch{Expression: m.Expression},
		})
	}
	return &kpolv1.MutatingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: kpolv1.SchemeGroupVersion.String(), Kind: "MutatingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: backends.Labels()},
		Spec:       spec,
	}
}
