package kyverno

import (
	"fmt"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/ir"
)

// A validate.deny rule, lowered as Kyverno's validator runs it
// (validate_resource.go validateDeny): the deny conditions are one
// variable (an evaluation error, e.g. a missing key, is Kyverno's rule
// error and follows the failurePolicy), the outcome another, and one
// validation fails when the conditions hold. JMESPath preconditions are a
// match condition (false: Kyverno skips, the policy is not evaluated).

const (
	// DenyVariable names the variable holding a deny rule's conditions
	// on the request: true when Kyverno denies.
	DenyVariable = "kyvernoDeny"
	// DenyBeforeVariable names the variable holding the conditions on the
	// old object of an UPDATE, for Enforce rules that allow existing
	// violations (false when Kyverno does not look at the old object).
	DenyBeforeVariable = "kyvernoDenyBefore"
	// PreconditionsName names the match condition holding a rule's JMESPath
	// preconditions.
	PreconditionsName = "kyverno-preconditions"
)

// denyRule fills pol with the variables and validation of the deny rule
// at path, or says why it cannot.
func (r *reader) denyRule(pol *ir.Policy, c computedRule, path string, m loweredMatch, enforce bool) *refusal {
	v := c.rule.Validation
	vp := path + ".validate.deny"
	conds, f := r.denyConditions(v.Deny, vp, r.validationScope(conditions.Scope{}))
	if f != nil {
		return f
	}
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: DenyVariable, Expression: conds, Origin: r.origin(vp)})
	outcome := "variables." + DenyVariable + " ? 'fail' : 'pass'"
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		before, f := r.denyConditions(v.Deny, vp, r.scope(oldObjectScope))
		if f != nil {
			return f
		}
		pre := "true"
		if c.rule.RawAnyAllConditions != nil {
			pre, f = r.preconditions(c, path, r.scope(oldObjectScope))
			if f != nil {
				return f
			}
		}
		when := existingViolationGuard(m)
		pol.Variables = append(pol.Variables, ir.NamedExpression{Name: DenyBeforeVariable, Expression: when + " && (" + pre + ") ? (" + before + ") : false", Origin: r.origin(vp)})
		outcome = "variables." + DenyVariable + " && variables." + DenyBeforeVariable + " ? 'skip' : " + outcome
	}
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: OutcomeVariable, Expression: outcome, Origin: r.origin(vp)})
	msg, f := r.denyMessage(c, path)
	if f != nil {
		return f
	}
	val := ir.Validation{Expression: "variables." + OutcomeVariable + " != 'fail'", Origin: r.origin(vp)}
	if strings.Contains(v.Message, "{{") {
		val.MessageExpression = msg
		mo := r.origin(path + ".validate.message")
		val.MessageExpressionOrigin = &mo
	} else {
		val.Message = msg
	}
	pol.Validations = []ir.Validation{val}
	pol.AuditAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: "variables." + OutcomeVariable + " == 'skip' ? 'the old object violates the rule too (allowExistingViolations)' : ''", Origin: r.origin(vp)}}
	return nil
}

// oldObjectScope reads a rule's conditions on the old object of an UPDATE,
// as Kyverno does for allowExistingViolations: the old object as the
// object, with no old object of its own, as on a CREATE.
var oldObjectScope = conditions.Scope{Object: "oldObject", OldObject: "null", Operation: "'CREATE'"}

// denyConditions translates the deny block's any/all conditions.
func (r *reader) denyConditions(d *kyvernov1.Deny, vp string, s conditions.Scope) (string, *refusal) {
	// A deny block without conditions always denies (Kyverno evaluates an
	// empty any/all block as true).
	return r.translateConditions(d.GetAnyAllConditions(), "validate.deny", vp+".conditions", s)
}

// preconditions translates the rule's JMESPath preconditions.
func (r *reader) preconditions(c computedRule, path string, s conditions.Scope) (string, *refusal) {
	return r.translateConditions(c.rule.GetAnyAllConditions(), "preconditions", path+".preconditions", s)
}

// translateConditions translates any/all conditions at the field path at,
// or refuses them as feature.
func (r *reader) translateConditions(raw any, feature, at string, s conditions.Scope) (string, *refusal) {
	conds, err := conditions.Decode(raw)
	if err != nil {
		return "", r.conditionRefusal(feature, at, err)
	}
	if f := conditionMessages(conds, at); f != nil {
		return "", f
	}
	fresh := 0
	e, err := conditions.Conditions(conds, s, &fresh)
	if err != nil {
		return "", r.conditionRefusal(feature, at, err)
	}
	return e, nil
}

// conditionMessages refuses condition messages: Kyverno joins the messages
// of the conditions that decided into the rule's message.
func conditionMessages(c kyvernov1.AnyAllConditions, at string) *refusal {
	for i, cond := range c.AnyConditions {
		if cond.Message != "" {
			return &refusal{"condition message", fmt.Sprintf("%s.any[%d].message", at, i), "condition messages are joined into Kyverno's rule message; they are not translated"}
		}
	}
	for i, cond := range c.AllConditions {
		if cond.Message != "" {
			return &refusal{"condition message", fmt.Sprintf("%s.all[%d].message", at, i), "condition messages are joined into Kyverno's rule message; they are not translated"}
		}
	}
	return nil
}

// conditionRefusal places a translation error at the condition field it
// names, or the nearest field of the file.
func (r *reader) conditionRefusal(feature, at string, err error) *refusal {
	why := err.Error()
	if ce, ok := err.(*conditions.Error); ok {
		why = ce.Reason
		if ce.Field != "" {
			p := at + "." + ce.Field
			for p != at && r.doc.NodeAt(p) == nil {
				p = p[:max(strings.LastIndexAny(p, ".["), len(at))]
			}
			at = p
		}
	}
	return &refusal{feature, at, why}
}

// denyMessage is getDenyMessage for a failed deny rule: validate.message
// with its variables, or "validation error: rule NAME failed".
func (r *reader) denyMessage(c computedRule, path string) (string, *refusal) {
	m := c.rule.Validation.Message
	if m == "" {
		return "validation error: rule " + c.rule.Name + " failed", nil
	}
	if !strings.Contains(m, "{{") {
		return m, nil
	}
	fresh := 0
	e, err := conditions.Message(m, r.validationScope(conditions.Scope{}), &fresh)
	if err != nil {
		return "", &refusal{"validate.message variables", path + ".validate.message", err.Error()}
	}
	return e, nil
}
