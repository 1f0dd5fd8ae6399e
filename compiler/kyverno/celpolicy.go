package kyverno

import (
	"fmt"
	"strconv"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// ValidatingPolicy and MutatingPolicy: admission policies with Kyverno's
// extras. Every version (v1alpha1, v1beta1, v1) has the same spec type.

type validatingPolicyObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta                     `json:"metadata"`
	Spec            policiesv1alpha1.ValidatingPolicySpec `json:"spec"`
	Status          any                                   `json:"status,omitempty"`
}

type mutatingPolicyObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta                   `json:"metadata"`
	Spec            policiesv1alpha1.MutatingPolicySpec `json:"spec"`
	Status          any                                 `json:"status,omitempty"`
}

func (r *reader) validatingPolicy() {
	var p validatingPolicyObject
	if ds := r.doc.Decode(&p, "a Kyverno ValidatingPolicy"); len(ds) > 0 {
		r.diags = append(r.diags, ds...)
		return
	}
	if r.refused(nil) {
		return
	}
	ref := ir.PolicyRef{APIVersion: r.apiVersion, Kind: r.kind, Name: p.Metadata.Name,
		Severity: p.Metadata.Annotations[ir.SeverityAnnotation], Category: p.Metadata.Annotations[ir.CategoryAnnotation]}
	if r.kind == "NamespacedValidatingPolicy" {
		ref.Namespace = p.Metadata.Namespace
		if ref.Namespace == "" {
			ref.Namespace = "default"
		}
	}
	if !r.celPolicyReadable(p.Metadata, p.Spec.MatchConstraints) {
		return
	}
	if e := p.Spec.EvaluationConfiguration; e != nil && e.Mode != "" && e.Mode != "Kubernetes" {
		r.skip(ref, "spec.evaluation.mode", "evaluation.mode "+e.Mode, "admitc evaluates admission requests (mode Kubernetes), not JSON payloads: keep this policy under Kyverno")
		return
	}
	pol := r.validatingIR(namespaced(ref, p.Metadata.Name), ref, &p.Spec)
	if f := libraryRefusal(pol); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	r.policies = append(r.policies, pol)
	for _, g := range vpAutogen(&p.Spec) {
		gref := ref
		gref.AutogenOf = p.Metadata.Name
		r.policies = append(r.policies, r.validatingIR(namespaced(ref, g.prefix+p.Metadata.Name), gref, g.spec.(*policiesv1alpha1.ValidatingPolicySpec)))
	}
}

// namespaced is the IR name of a NamespacedValidatingPolicy's policy:
// NAMESPACE.NAME, as a Policy's rules are NAMESPACE.POLICY.RULE.
func namespaced(ref ir.PolicyRef, name string) string {
	if ref.Namespace == "" {
		return name
	}
	return ref.Namespace + "." + name
}

// namespaceScope is the matchCondition that keeps a
// NamespacedValidatingPolicy to its namespace, as Kyverno's webhook does
// (it hands a request only to the policies of the request's namespace).
func (r *reader) namespaceScope(ns string) ir.NamedExpression {
	o := r.origin("metadata.namespace")
	o.Path = "metadata.namespace (generated)"
	return ir.NamedExpression{Name: MatchConditionName, Expression: celNamespace + " == " + strconv.Quote(ns), Origin: o}
}

// celPolicyReadable checks what every policies.kyverno.io policy needs.
func (r *reader) celPolicyReadable(meta metav1.ObjectMeta, mc *admissionregistrationv1.MatchResources) bool {
	if meta.Name == "" {
		r.errorf("metadata.name", "missing metadata.name")
		return false
	}
	if mc == nil || len(mc.ResourceRules) == 0 {
		r.diags = append(r.diags, diag.Diagnostic{Origin: r.doc.OriginNear("spec.matchConstraints.resourceRules"), Message: fmt.Sprintf("a %s needs matchConstraints with at least one resource rule (Kyverno's webhook refuses it without; a policy without it matches nothing)", r.kind)})
		return false
	}
	return true
}

func (r *reader) validatingIR(name string, ref ir.PolicyRef, s *policiesv1alpha1.ValidatingPolicySpec) *ir.Policy {
	p := &ir.Policy{
		Name: name, Type: Type, Kind: ir.Validating, Origin: r.origin(""), From: &ref, CEL: ir.CELKyverno, CELNamespace: ref.Namespace,
		FailurePolicy: failurePolicy(s.FailurePolicy), MatchConstraints: apiconv.FromMatchResources(s.MatchConstraints),
		MatchConditions:  r.conditions(s.MatchConditions, "spec.matchConditions"),
		Variables:        r.variables(s.Variables, "spec.variables"),
		Validations:      r.validations(s.Validations, "", "spec.validations"),
		AuditAnnotations: r.auditAnnotations(s.AuditAnnotations, "spec.auditAnnotations"),
	}
	if ref.Namespace != "" {
		p.MatchConditions = append([]ir.NamedExpression{r.namespaceScope(ref.Namespace)}, p.MatchConditions...)
	}
	b := ir.Binding{Name: name, Origin: p.Origin}
	for _, a := range s.ValidationActions() {
		b.Actions = append(b.Actions, ir.Action(a))
	}
	p.Bindings = []ir.Binding{b}
	if len(p.Validations) == 0 && len(p.AuditAnnotations) == 0 {
		r.errorf("spec", "a ValidatingPolicy needs validations or auditAnnotations")
	}
	return p
}

func (r *reader) mutatingPolicy() {
	var p mutatingPolicyObject
	if ds := r.doc.Decode(&p, "a Kyverno MutatingPolicy"); len(ds) > 0 {
		r.diags = append(r.diags, ds...)
		return
	}
	if r.refused(nil) {
		return
	}
	ref := ir.PolicyRef{APIVersion: r.apiVersion, Kind: r.kind, Name: p.Metadata.Name}
	if !r.celPolicyReadable(p.Metadata, p.Spec.MatchConstraints) {
		return
	}
	if f := mutatingRefusal(&p.Spec); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	pol := r.mutatingIR(p.Metadata.Name, ref, &p.Spec)
	if f := libraryRefusal(pol); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	r.policies = append(r.policies, pol)
	for _, g := range mpAutogen(&p.Spec) {
		gref := ref
		gref.AutogenOf = p.Metadata.Name
		r.policies = append(r.policies, r.mutatingIR(g.prefix+p.Metadata.Name, gref, g.spec.(*policiesv1alpha1.MutatingPolicySpec)))
	}
}

// mutatingRefusal names what a MutatingPolicy needs that admitc cannot do.
func mutatingRefusal(s *policiesv1alpha1.MutatingPolicySpec) *refusal {
	e := s.EvaluationConfiguration
	switch {
	case e != nil && e.Mode != "" && e.Mode != "Kubernetes":
		return &refusal{"evaluation.mode " + e.Mode, "spec.evaluation.mode", "admitc evaluates admission requests (mode Kubernetes), not JSON payloads: keep this policy under Kyverno"}
	case s.TargetMatchConstraints != nil || (e != nil && e.MutateExistingConfiguration != nil && e.MutateExistingConfiguration.Enabled != nil && *e.MutateExistingConfiguration.Enabled):
		return &refusal{"mutateExisting", "spec.targetMatchConstraints", "mutating existing objects happens in Kyverno's background controller, not at admission: keep this policy under Kyverno"}
	case len(s.AuditAnnotations) > 0:
		return &refusal{"auditAnnotations on a MutatingPolicy", "spec.auditAnnotations", "admission mutations carry no audit annotations in admitc's IR: drop the auditAnnotations, or keep this policy under Kyverno"}
	}
	return nil
}

func (r *reader) mutatingIR(name string, ref ir.PolicyRef, s *policiesv1alpha1.MutatingPolicySpec) *ir.Policy {
	p := &ir.Policy{
		Name: name, Type: Type, Kind: ir.Mutating, Origin: r.origin(""), From: &ref, CEL: ir.CELKyverno,
		FailurePolicy: failurePolicy(s.FailurePolicy), MatchConstraints: apiconv.FromMatchResources(s.MatchConstraints),
		MatchConditions: r.conditions(s.MatchConditions, "spec.matchConditions"),
		Variables:       r.variables(s.Variables, "spec.variables"), ReinvocationPolicy: ir.ReinvokeNever,
		Bindings: []ir.Binding{{Name: name, Origin: r.origin("")}},
	}
	if s.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
		p.ReinvocationPolicy = ir.ReinvokeIfNeeded
	}
	for i, m := range s.Mutations {
		path := fmt.Sprintf("spec.mutations[%d]", i)
		switch {
		case m.PatchType == admissionregistrationv1alpha1.PatchTypeJSONPatch && m.JSONPatch != nil:
			p.Mutations = append(p.Mutations, ir.Mutation{PatchType: ir.JSONPatch, Expression: m.JSONPatch.Expression, Origin: r.origin(path + ".jsonPatch.expression")})
		case m.PatchType == admissionregistrationv1alpha1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			p.Mutations = append(p.Mutations, ir.Mutation{PatchType: ir.ApplyConfiguration, Expression: m.ApplyConfiguration.Expression, Origin: r.origin(path + ".applyConfiguration.expression")})
		default:
			r.errorf(path+".patchType", "patchType %q needs its matching field (jsonPatch or applyConfiguration)", m.PatchType)
		}
	}
	if len(p.Mutations) == 0 {
		r.errorf("spec.mutations", "a MutatingPolicy needs mutations")
	}
	return p
}

func failurePolicy(f *admissionregistrationv1.FailurePolicyType) ir.FailurePolicy {
	if f != nil && *f == admissionregistrationv1.Ignore {
		return ir.Ignore
	}
	return ir.Fail
}
