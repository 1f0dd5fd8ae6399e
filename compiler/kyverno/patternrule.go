package kyverno

import (
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/ir"
)

// A validate.pattern or validate.anyPattern rule, lowered as Kyverno's
// validate handler runs it (pkg/engine/handlers/validation/validate_resource.go):
// the pattern's outcome on the object is one variable, and one validation
// fails on fail, raises an evaluation error on Kyverno's engine error (so
// the failurePolicy decides, as Kyverno's webhook does) and holds on pass
// and skip. A skip is published as the audit annotation SkipAnnotation
// (an empty value publishes nothing).

const (
	// PatternVariable names the variable holding a pattern rule's result
	// on the object: 'pass', 'skip', 'fail <path>' or 'error <path>'.
	PatternVariable = "kyvernoPattern"
	// PatternBeforeVariable names the variable holding the result on the
	// old object of an UPDATE, for Enforce rules that allow existing
	// violations ('pass' when Kyverno does not look at the old object).
	PatternBeforeVariable = "kyvernoPatternBefore"
	// OutcomeVariable names the variable holding the rule's outcome as
	// Kyverno reports it: 'pass', 'skip', 'fail' or 'error'.
	OutcomeVariable = "kyvernoOutcome"
	// SkipAnnotation is the audit annotation a pattern rule publishes when
	// Kyverno's outcome is skip (its value says why); a test runner reports
	// skip by it.
	SkipAnnotation = "kyverno-skip"
)

// patternRule fills pol with the variables, validation and audit
// annotation of the pattern rule at path, or says why it cannot.
func (r *reader) patternRule(pol *ir.Policy, c computedRule, path string, m loweredMatch, enforce bool) *refusal {
	v := c.rule.Validation
	vp := path + ".validate"
	e, err := translatePattern(v, "object", r.patternValues())
	if err != nil {
		return r.patternRefusal(vp, err, c.autogenOf != "")
	}
	ref := "variables." + PatternVariable
	outcome := e.Outcome(ref)
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: PatternVariable, Expression: e.Result, Origin: r.origin(vp + patternField(v))})
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		// Kyverno matches the old object against the pattern it has
		// substituted for the request: its values read object, not oldObject.
		before, _ := translatePattern(v, "oldObject", r.patternValues())
		when := existingViolationGuard(m)
		pol.Variables = append(pol.Variables, ir.NamedExpression{Name: PatternBeforeVariable, Expression: when + " ? (" + before.Result + ") : 'pass'", Origin: r.origin(vp + patternField(v))})
		outcome = ref + ".startsWith('fail') && variables." + PatternBeforeVariable + ".startsWith('fail') ? 'skip' : " + outcome
	}
	pol.Variables = append(pol.Variables, ir.NamedExpression{Name: OutcomeVariable, Expression: outcome, Origin: r.origin(vp + patternField(v))})
	out := "variables." + OutcomeVariable
	val := ir.Validation{
		Expression:        out + " == 'error' ? {}[" + ref + "] : " + out + " != 'fail'",
		MessageExpression: e.Message(ref, c.rule.Name, v.Message),
		Origin:            r.origin(vp + patternField(v)),
	}
	switch {
	case messageReferences(v.Message):
		// Kyverno substitutes references before variables, and a message's
		// references never resolve: its message is buildErrorMessage's
		// substitution error, followed by the pattern error's text.
		val.MessageExpression = ""
		val.Message = "validation error: variables substitution error in rule " + c.rule.Name
		pol.Notes = append(pol.Notes, "validate.message has $( ) references, which Kyverno cannot resolve in a message: it reports its substitution error instead of the message, as this policy does (without Kyverno's pattern error text)")
	case strings.Contains(v.Message, "{{"):
		if f := r.patternMessage(&val, e, ref, c.rule.Name, v.Message, path); f != nil {
			return f
		}
	}
	pol.Validations = []ir.Validation{val}
	pol.AuditAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: out + " == 'skip' ? (" + skipReason(e) + ") : ''", Origin: r.origin(vp + patternField(v))}}
	return nil
}

// patternMessage makes the message of a pattern rule whose validate.message
// has {{ }} variables: buildErrorMessage's text with the variables
// substituted from the request. A variable that does not resolve fails the
// message expression, which leaves the static message (Kyverno writes its
// substitution error there) and the decision.
func (r *reader) patternMessage(val *ir.Validation, e pattern.Expr, ref, rule, message, path string) *refusal {
	fresh := 0
	m, err := conditions.Message(message, r.validationScope(conditions.Scope{}), &fresh)
	if err != nil {
		return &refusal{"validate.message variables", path + ".validate.message", err.Error()}
	}
	val.MessageExpression = "'validation error: ' + [" + m + "].map(mm, mm.endsWith('.') ? mm : mm + '.')[0] + ' ' + (" + e.Message(ref, rule, "") + ").substring(18)"
	val.Message = "validation error: variables substitution error in rule " + rule
	mo := r.origin(path + ".validate.message")
	val.MessageExpressionOrigin = &mo
	return nil
}

// existingViolationGuard is when Kyverno looks at the old object for
// allowExistingViolations: an UPDATE whose old object the rule matches.
func existingViolationGuard(m loweredMatch) string {
	when := "request.operation == 'UPDATE'"
	if cond := oldObjectMatch(m); cond != "true" {
		when += " && (" + cond + ")"
	}
	return when
}

// translatePattern translates the rule's pattern or anyPattern over root,
// its {{ }} values read by resolve.
func translatePattern(v *kyvernov1.Validation, root string, resolve pattern.Resolve) (pattern.Expr, error) {
	if p := v.GetPattern(); p != nil {
		return pattern.TranslateWith(p, root, resolve)
	}
	ps, _ := v.GetAnyPattern().([]any)
	return pattern.TranslateAnyWith(ps, root, resolve)
}

// patternValues reads a rule-level pattern's {{ }} values as Kyverno
// substitutes them, from the request and the rule's context.
func (r *reader) patternValues() pattern.Resolve {
	s, fresh := r.validationScope(conditions.Scope{}), 0
	return func(text string) (string, error) { return conditions.Value(text, s, &fresh) }
}

func patternField(v *kyvernov1.Validation) string {
	if v.GetPattern() != nil {
		return ".pattern"
	}
	return ".anyPattern"
}

// skipReason is a CEL string saying why Kyverno skipped the rule.
func skipReason(e pattern.Expr) string {
	if e.Any {
		return "variables." + PatternVariable + " == 'skip' ? 'every anyPattern skipped (a conditional or global anchor not satisfied)' : 'the old object violates the rule too (allowExistingViolations)'"
	}
	return "variables." + PatternVariable + " == 'skip' ? 'a conditional or global anchor is not satisfied' : 'the old object violates the rule too (allowExistingViolations)'"
}

// patternRefusal places a translation refusal at the pattern construct it
// names (or the nearest field of the file that holds it); an autogen
// rule's construct is placed in the rule it was made from.
func (r *reader) patternRefusal(vp string, err error, autogen bool) *refusal {
	at, why := vp, err.Error()
	if pe, ok := err.(*pattern.Error); ok {
		at, why = r.constructAt(vp, pe.Path, autogen), pe.Reason
	}
	return &refusal{"validate.pattern construct", at, withFix(why, "rewrite the pattern without it (or the check as validate.cel), or keep this rule under Kyverno")}
}

// constructAt is the field of the file at path under base (a pattern or an
// overlay), or the nearest field above it that the file holds; an autogen
// rule's path is taken back to the rule it was made from.
func (r *reader) constructAt(base, path string, autogen bool) string {
	if autogen {
		path = unnest(path)
	}
	at := base + "." + path
	for at != base && r.doc.NodeAt(at) == nil {
		at = at[:max(strings.LastIndexAny(at, ".["), len(base))]
	}
	return at
}

// unnest is the path in the source rule of a path in its autogen rule's
// pattern, which autogen put under spec.template or
// spec.jobTemplate.spec.template.
func unnest(p string) string {
	for _, tpl := range []string{".spec.jobTemplate.spec.template", ".spec.template"} {
		if i := strings.Index(p, tpl); i >= 0 {
			return p[:i] + p[i+len(tpl):]
		}
	}
	return p
}

// oldObjectMatch is the rule's match decided for the old object of an
// UPDATE as if it were created, as Kyverno's validateOldObject asks
// (matchResource with operation CREATE).
func oldObjectMatch(m loweredMatch) string {
	if m.condition == "" {
		for _, rr := range m.constraints.ResourceRules {
			for _, op := range rr.Operations {
				if op == "*" || op == ir.Create {
					return "true"
				}
			}
		}
		return "false"
	}
	c := strings.ReplaceAll(m.condition, celMeta, "oldObject.metadata")
	return strings.ReplaceAll(c, "request.operation", `"CREATE"`)
}

// withoutDelete drops DELETE from the rule's operations: Kyverno's
// validate handler gives no response for a pattern rule on DELETE
// (validateResourceWithRule). A rule on DELETE only matches nothing.
func withoutDelete(rules []ir.ResourceRule) []ir.ResourceRule {
	var out []ir.ResourceRule
	for _, rr := range rules {
		var ops []ir.Operation
		for _, op := range rr.Operations {
			switch op {
			case "*":
				ops = append(ops, ir.Create, ir.Update, ir.Connect)
			case ir.Delete:
			default:
				ops = append(ops, op)
			}
		}
		if len(ops) > 0 {
			rr.Operations = ops
			out = append(out, rr)
		}
	}
	return out
}
