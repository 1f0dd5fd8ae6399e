package kyverno

import (
	"errors"
	"reflect"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/podsecurity"
	"github.com/admitc/admitc/ir"
)

// PodSecurityVariable names the variable holding a podSecurity rule's
// failing checks on the object, as Kyverno prints them (the podsecurity
// subpackage's result; its views and checks are the variables named
// PodSecurityVariable+"Pod", PodSecurityVariable+"_<check>", ...).
const PodSecurityVariable = "kyvernoPodSecurity"

// podSecurityBeforeVariable is the same on the old object of an UPDATE.
const podSecurityBeforeVariable = "kyvernoPodSecurityBefore"

// podSecurityRule fills pol with a validate.podSecurity rule, as Kyverno's
// validatePssHandler runs it: the checks' result, the outcome (fail when a
// check fails; skip when an Enforce rule allowing existing violations
// fails on an UPDATE whose old object fails too), one validation whose
// message is Kyverno's, and SkipAnnotation.
func (r *reader) podSecurityRule(pol *ir.Policy, c computedRule, path string, m loweredMatch, enforce bool) *refusal {
	ps := c.rule.Validation.PodSecurity
	vp := path + ".validate.podSecurity"
	t, err := podsecurity.Translate(ps, "object", PodSecurityVariable)
	if err != nil {
		var pe *podsecurity.Error
		if errors.As(err, &pe) {
			return &refusal{"validate.podSecurity", vp + "." + pe.Path, pe.Reason}
		}
		return &refusal{"validate.podSecurity", vp, err.Error()}
	}
	o := r.origin(vp)
	for _, v := range t.Variables {
		pol.Variables = append(pol.Variables, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: o})
	}
	outcome := "size(" + t.Result + ") > 0 ? 'fail' : 'pass'"
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		before, _ := podsecurity.Translate(ps, "oldObject", podSecurityBeforeVariable)
		for _, v := range before.Variables {
			pol.Variables = append(pol.Variables, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: o})
		}
		outcome = "size(" + t.Result + ") > 0 && (" + existingViolationGuard(m) + ") && size(" + before.Result + ") > 0 ? 'skip' : " + outcome
	}
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: OutcomeVariable, Expression: outcome, Origin: o})
	out := "variables." + OutcomeVariable
	pol.Validations = []ir.Validation{{
		Expression:        out + " != 'fail'",
		MessageExpression: podsecurity.Message(c.rule.Name, ps, t.Result),
		Origin:            o,
	}}
	pol.AuditAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: out + " == 'skip' ? 'the old object violates the rule too (allowExistingViolations)' : ''", Origin: o}}
	return nil
}

// emptyPodSecurity says whether ps is the zero block, which Kyverno's
// engine does not treat as a podSecurity rule (HasValidatePodSecurity).
func emptyPodSecurity(ps *kyvernov1.PodSecurity) bool {
	return reflect.DeepEqual(*ps, kyvernov1.PodSecurity{})
}
