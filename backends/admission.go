package backends

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
)

// This file holds the admissionregistration.k8s.io/v1 pieces that the
// policy backends (vap, map) share: one small helper per target field.

// ParamRef converts the IR's paramRef.
func ParamRef(r *ir.ParamRef) *admissionregistrationv1.ParamRef {
	if r == nil {
		return nil
	}
	action := admissionregistrationv1.ParameterNotFoundActionType(r.ParameterNotFoundAction)
	return &admissionregistrationv1.ParamRef{Name: r.Name, Namespace: r.Namespace, ParameterNotFoundAction: &action}
}

// Constraints are a policy's matchConstraints: its own when imported, else
// the resources of its Match.
func Constraints(p *ir.Policy) *admissionregistrationv1.MatchResources {
	if p.Imported() {
		return apiconv.Emit(p.MatchConstraints)
	}
	return MatchResources(RulesFor([]*ir.Policy{p}, true))
}

// BindingSpec is what a binding of p says: for an imported policy, each of
// its bindings; else one binding named after the policy, scoped to
// namespaces, with the policy's actions and paramRef.
type BindingSpec struct {
	Name           string
	Actions        []admissionregistrationv1.ValidationAction
	MatchResources *admissionregistrationv1.MatchResources
	ParamRef       *admissionregistrationv1.ParamRef
}

// Bindings returns the bindings to emit for p.
func Bindings(p *ir.Policy, namespaces []string) []BindingSpec {
	if !p.Imported() {
		return []BindingSpec{{Name: p.Name, Actions: actions(p.Actions), ParamRef: ParamRef(p.ParamRef),
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: NamespaceSelector(namespaces)}}}
	}
	var out []BindingSpec
	for _, b := range p.Bindings {
		out = append(out, BindingSpec{Name: b.Name, Actions: actions(b.Actions), MatchResources: apiconv.Emit(b.MatchResources), ParamRef: apiconv.ParamRef(b.ParamRef)})
	}
	return out
}

func actions(as []ir.Action) []admissionregistrationv1.ValidationAction {
	out := make([]admissionregistrationv1.ValidationAction, len(as))
	for i, a := range as {
		out[i] = admissionregistrationv1.ValidationAction(a)
	}
	return out
}

// NamespaceSelector scopes a binding: kubernetes.io/metadata.name In
// namespaces, or, with none given, every namespace but kube-system, so a
// broken policy can never block the control plane's own pods.
func NamespaceSelector(namespaces []string) *metav1.LabelSelector {
	if len(namespaces) == 0 {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: NamespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}},
		}}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: append([]string(nil), namespaces...)},
	}}
}

// MatchResources names the matched resources, one rule per API group.
func MatchResources(rules []ResourceRule) *admissionregistrationv1.MatchResources {
	equivalent := admissionregistrationv1.Equivalent
	mr := &admissionregistrationv1.MatchResources{MatchPolicy: &equivalent}
	for _, r := range rules {
		mr.ResourceRules = append(mr.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: operations(r.Operations),
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{r.Version}, Resources: r.Resources},
			},
		})
	}
	return mr
}

func operations(ops []ir.Operation) []admissionregistrationv1.OperationType {
	out := make([]admissionregistrationv1.OperationType, len(ops))
	for i, o := range ops {
		out[i] = admissionregistrationv1.OperationType(o)
	}
	return out
}

// MatchConditions converts the IR's match conditions.
func MatchConditions(mcs []ir.NamedExpression) []admissionregistrationv1.MatchCondition {
	var out []admissionregistrationv1.MatchCondition
	for _, mc := range mcs {
		out = append(out, admissionregistrationv1.MatchCondition{Name: mc.Name, Expression: mc.Expression})
	}
	return out
}

// Variables converts the IR's variables.
func Variables(vs []ir.NamedExpression) []admissionregistrationv1.Variable {
	var out []admissionregistrationv1.Variable
	for _, v := range vs {
		out = append(out, admissionregistrationv1.Variable{Name: v.Name, Expression: v.Expression})
	}
	return out
}

// Validations converts the IR's validations.
func Validations(vs []ir.Validation) []admissionregistrationv1.Validation {
	var out []admissionregistrationv1.Validation
	for _, v := range vs {
		val := admissionregistrationv1.Validation{Expression: v.Expression, Message: v.Message, MessageExpression: v.MessageExpression}
		if v.Reason != "" {
			reason := metav1.StatusReason(v.Reason)
			val.Reason = &reason
		}
		out = append(out, val)
	}
	return out
}

// AuditAnnotations converts the IR's audit annotations.
func AuditAnnotations(as []ir.AuditAnnotation) []admissionregistrationv1.AuditAnnotation {
	var out []admissionregistrationv1.AuditAnnotation
	for _, a := range as {
		out = append(out, admissionregistrationv1.AuditAnnotation{Key: a.Key, ValueExpression: a.ValueExpression})
	}
	return out
}

// FailurePolicy converts the IR's failure policy.
func FailurePolicy(f ir.FailurePolicy) *admissionregistrationv1.FailurePolicyType {
	fp := admissionregistrationv1.FailurePolicyType(f)
	return &fp
}
