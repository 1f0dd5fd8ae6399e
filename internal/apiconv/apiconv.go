// Package apiconv converts the IR's scope (match resources, rules, label
// selectors, param refs) to and from the admissionregistration.k8s.io/v1
// types, in one place for the frontends, the backends and the runtime. It
// imports only the IR and the Kubernetes API types.
package apiconv

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitc/admitc/ir"
)

// MatchResources converts IR match resources to the API type, with the
// API server's defaults (empty selectors match everything, matchPolicy
// Equivalent, scope "*").
func MatchResources(m *ir.MatchResources) admissionregistrationv1.MatchResources {
	if m == nil {
		m = &ir.MatchResources{}
	}
	mp := admissionregistrationv1.Equivalent
	if m.MatchPolicy == ir.Exact {
		mp = admissionregistrationv1.Exact
	}
	out := admissionregistrationv1.MatchResources{
		NamespaceSelector:    Selector(m.NamespaceSelector),
		ObjectSelector:       Selector(m.ObjectSelector),
		ResourceRules:        Rules(m.ResourceRules),
		ExcludeResourceRules: Rules(m.ExcludeResourceRules),
		MatchPolicy:          &mp,
	}
	if out.NamespaceSelector == nil {
		out.NamespaceSelector = &metav1.LabelSelector{}
	}
	if out.ObjectSelector == nil {
		out.ObjectSelector = &metav1.LabelSelector{}
	}
	return out
}

// Rules converts IR resource rules to the API type.
func Rules(rs []ir.ResourceRule) []admissionregistrationv1.NamedRuleWithOperations {
	var out []admissionregistrationv1.NamedRuleWithOperations
	for _, r := range rs {
		scope := admissionregistrationv1.ScopeType(r.Scope)
		if scope == "" {
			scope = admissionregistrationv1.AllScopes
		}
		ops := make([]admissionregistrationv1.OperationType, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = admissionregistrationv1.OperationType(o)
		}
		out = append(out, admissionregistrationv1.NamedRuleWithOperations{
			ResourceNames: r.ResourceNames,
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: ops,
				Rule: admissionregistrationv1.Rule{
					APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Scope: &scope,
				},
			},
		})
	}
	return out
}

// Selector converts an IR label selector to the API type (nil stays nil).
func Selector(s *ir.LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values,
		})
	}
	return out
}

// FromMatchResources converts API match resources to the IR (nil stays nil).
func FromMatchResources(m *admissionregistrationv1.MatchResources) *ir.MatchResources {
	if m == nil {
		return nil
	}
	out := &ir.MatchResources{
		NamespaceSelector:    FromSelector(m.NamespaceSelector),
		ObjectSelector:       FromSelector(m.ObjectSelector),
		ResourceRules:        FromRules(m.ResourceRules),
		ExcludeResourceRules: FromRules(m.ExcludeResourceRules),
	}
	if m.MatchPolicy != nil {
		out.MatchPolicy = ir.MatchPolicy(*m.MatchPolicy)
	}
	return out
}

// FromRules converts API rules to the IR.
func FromRules(rs []admissionregistrationv1.NamedRuleWithOperations) []ir.ResourceRule {
	var out []ir.ResourceRule
	for _, r := range rs {
		rule := ir.ResourceRule{
			APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, ResourceNames: r.ResourceNames,
		}
		if r.Scope != nil {
			rule.Scope = string(*r.Scope)
		}
		for _, o := range r.Operations {
			rule.Operations = append(rule.Operations, ir.Operation(o))
		}
		out = append(out, rule)
	}
	return out
}

// FromSelector converts an API label selector to the IR; an empty selector
// (which matches everything) becomes nil.
func FromSelector(s *metav1.LabelSelector) *ir.LabelSelector {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return nil
	}
	out := &ir.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, ir.LabelSelectorRequirement{Key: e.Key, Operator: string(e.Operator), Values: e.Values})
	}
	return out
}

// ParamRef converts an IR param ref to the API type.
func ParamRef(p *ir.ParamRef) *admissionregistrationv1.ParamRef {
	if p == nil {
		return nil
	}
	a := admissionregistrationv1.ParameterNotFoundActionType(p.ParameterNotFoundAction)
	if a == "" {
		a = admissionregistrationv1.DenyAction
	}
	return &admissionregistrationv1.ParamRef{Name: p.Name, Namespace: p.Namespace, Selector: Selector(p.Selector), ParameterNotFoundAction: &a}
}

// FromParamRef converts an API param ref to the IR (nil stays nil).
func FromParamRef(p *admissionregistrationv1.ParamRef) *ir.ParamRef {
	if p == nil {
		return nil
	}
	out := &ir.ParamRef{Name: p.Name, Namespace: p.Namespace, ParameterNotFoundAction: ir.ParamDeny}
	if p.Selector != nil {
		out.Selector = &ir.LabelSelector{MatchLabels: p.Selector.MatchLabels}
		for _, e := range p.Selector.MatchExpressions {
			out.Selector.MatchExpressions = append(out.Selector.MatchExpressions, ir.LabelSelectorRequirement{Key: e.Key, Operator: string(e.Operator), Values: e.Values})
		}
	}
	if p.ParameterNotFoundAction != nil {
		out.ParameterNotFoundAction = ir.ParameterNotFoundAction(*p.ParameterNotFoundAction)
	}
	return out
}

// Emit converts IR match resources to the API type as written: no defaults
// filled in (nil stays nil), for emitted objects.
func Emit(m *ir.MatchResources) *admissionregistrationv1.MatchResources {
	if m == nil {
		return nil
	}
	out := &admissionregistrationv1.MatchResources{
		NamespaceSelector:    Selector(m.NamespaceSelector),
		ObjectSelector:       Selector(m.ObjectSelector),
		ResourceRules:        emitRules(m.ResourceRules),
		ExcludeResourceRules: emitRules(m.ExcludeResourceRules),
	}
	if m.MatchPolicy != "" {
		mp := admissionregistrationv1.MatchPolicyType(m.MatchPolicy)
		out.MatchPolicy = &mp
	}
	return out
}

func emitRules(rs []ir.ResourceRule) []admissionregistrationv1.NamedRuleWithOperations {
	out := Rules(rs)
	for i, r := range rs {
		if r.Scope == "" {
			out[i].Scope = nil
		}
	}
	return out
}
