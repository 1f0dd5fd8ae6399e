package kyverno

import (
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
	val := ir.Validation{Expression: "variables." + OutcomeVariable + " != 'fail'", Origin: r.origin(vp)}
	if f := r.denyMessage(&val, c, path); f != nil {
		return f
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
	fresh := 0
	e, err := conditions.Conditions(conds, s, &fresh)
	if err != nil {
		return "", r.conditionRefusal(feature, at, err)
	}
	return e, nil
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

// denyMessage sets the message of a failed deny rule as Kyverno's
// getDenyMessage writes it: validate.message and the messages of the deny
// conditions that held, joined with "; ", their {{ }} variables
// substituted (when that fails, Kyverno's message is the conditions'
// messages as written: the static fallback); with neither,
// "validation error: rule NAME failed". When the any conditions carry
// different messages, the first that holds chooses.
func (r *reader) denyMessage(val *ir.Validation, c computedRule, path string) *refusal {
	raw := c.rule.Validation.Deny.GetAnyAllConditions()
	conds, err := conditions.Decode(raw)
	if err != nil {
		return r.conditionRefusal("validate.deny", path+".validate.deny.conditions", err)
	}
	held := conditions.HeldMessages(conds, conditions.IsList(raw))
	msgs := conditions.DenyMessages(c.rule.Validation.Message, c.rule.Name, held)
	variables := strings.Contains(strings.Join(msgs, ""), "{{")
	field := messageField(c, path, held)
	fresh := 0
	if !variables {
		if len(msgs) == 1 {
			val.Message = msgs[0]
			return nil
		}
		first, err := conditions.FirstHolding(conds, r.validationScope(conditions.Scope{}), &fresh)
		if err != nil {
			return r.conditionRefusal("validate.deny", path+".validate.deny.conditions", err)
		}
		val.Message = msgs[0]
		val.MessageExpression = conditions.Choose(first, msgs)
		mo := r.origin(path + ".validate.deny.conditions")
		val.MessageExpressionOrigin = &mo
		return nil
	}
	if len(msgs) > 1 {
		return &refusal{"condition message", path + ".validate.deny.conditions", "the any conditions carry different messages and the rule's message has {{ }} variables: which message Kyverno substitutes depends on the condition that holds; this is not translated: give the conditions one message, or split the rule, one condition each"}
	}
	e, err := conditions.Message(msgs[0], r.validationScope(conditions.Scope{}), &fresh)
	if err != nil {
		return &refusal{"validate.message variables", field, err.Error()}
	}
	val.MessageExpression = e
	mo := r.origin(field)
	val.MessageExpressionOrigin = &mo
	val.Message = held[0]
	return nil
}

// messageField is the field path of the message with {{ }} variables:
// validate.message, or the deny conditions when only they have some.
func messageField(c computedRule, path string, held []string) string {
	if strings.Contains(c.rule.Validation.Message, "{{") || !strings.Contains(strings.Join(held, ""), "{{") {
		return path + ".validate.message"
	}
	return path + ".validate.deny.conditions"
}
