package kyverno

import (
	"errors"
	"strconv"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/compiler/kyverno/typed"
	"github.com/admitc/admitc/internal/apiresources"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A pattern rule is written twice. The exact dynamic translation
// (patternRule) decides as Kyverno does on an object of any shape, and is
// kept as the policy's Dynamic form. The typed translation reads the
// pattern against the schema of the kinds the rule matches and is what is
// emitted: one plain boolean validation, Kyverno's message (with its
// failure path) computed in messageExpression, only when it fails. It
// assumes what the API server guarantees of the objects it admits (their
// shape), which the runtime checks offline before trusting it
// (SchemaReads).

// OfflineSkip is the expression kept for offline tools only that says a
// typed pattern rule skipped (an Enforce rule on an UPDATE whose old object
// violates it too: allowExistingViolations).
const offlineSkipReason = "the old object violates the rule too (allowExistingViolations)"

// schemas is the schema resolver of the built-in kinds, shared.
var schemas = func() *kubeschema.Resolver {
	r, err := kubeschema.NewResolver()
	if err != nil {
		panic(err)
	}
	return r
}()

// typedPatternRule is pol, a lowered pattern rule, written against the
// schema of the kinds its rule matches, with pol as its Dynamic form; nil
// when the pattern or the rule holds what the typed translation does not
// take, or a kind has no known schema.
func (r *reader) typedPatternRule(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool) *ir.Policy {
	v := c.rule.Validation
	if pol.ParamKind != nil || len(pol.Variables) != len(patternVariables(pol)) || strings.Contains(v.Message, "{{") || messageReferences(v.Message) {
		return nil
	}
	nodes := ruleSchemas(c.rule)
	if len(nodes) == 0 {
		return nil
	}
	out, err := typedPolicy(pol, c, m, enforce, nodes)
	if err != nil {
		return nil
	}
	return out
}

// patternVariables are pol's variables that its pattern translation made.
func patternVariables(pol *ir.Policy) []ir.NamedExpression {
	var out []ir.NamedExpression
	for _, v := range pol.Variables {
		switch v.Name {
		case PatternVariable, PatternBeforeVariable, OutcomeVariable:
			out = append(out, v)
		}
	}
	return out
}

// typedPolicy translates the rule against each schema; every schema must
// give the same expressions (a rule for Deployments and StatefulSets reads
// the same pod template).
func typedPolicy(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool, nodes []kubeschema.Node) (*ir.Policy, error) {
	var out *ir.Policy
	for _, n := range nodes {
		p, err := typedWith(pol, c, m, enforce, n)
		if err != nil {
			return nil, err
		}
		if out != nil && (out.Validations[0].Expression != p.Validations[0].Expression || out.Validations[0].MessageExpression != p.Validations[0].MessageExpression) {
			return nil, errors.New("the kinds' schemas give different expressions")
		}
		out = p
	}
	return out, nil
}

// typedWith is the typed policy against one schema.
func typedWith(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool, n kubeschema.Node) (*ir.Policy, error) {
	b := celbuild.New()
	t := typed.NewTranslator(b)
	v := c.rule.Validation
	now, err := translateTyped(b, t, v, b.Ident("object"), n)
	if err != nil {
		return nil, err
	}
	valid := now.ok
	out := *pol
	out.Variables, out.AuditAnnotations, out.OfflineAnnotations = nil, nil, nil
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		before, err := translateTyped(b, t, v, b.Ident("oldObject"), n)
		if err != nil {
			return nil, err
		}
		guard, err := b.Parse(existingViolationGuard(m))
		if err != nil {
			return nil, err
		}
		existing := b.And(guard, b.Not(before.ok))
		valid = b.Or(valid, existing)
		skip := b.And(b.Not(now.ok), existing)
		out.OfflineAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: b.MustPrint(b.Ternary(skip, b.String(offlineSkipReason), b.String(""))), Origin: pol.Origin}}
	}
	out.Validations = []ir.Validation{{
		Expression:        b.MustPrint(valid),
		MessageExpression: b.MustPrint(now.message(b, c.rule.Name, v.Message)),
		Origin:            pol.Validations[0].Origin,
	}}
	out.SchemaReads = t.Reads()
	dynamic := *pol
	out.Dynamic = &dynamic
	return &out, nil
}

// typedOutcome is a pattern's or an anyPattern's translation over one root.
type typedOutcome struct {
	ok     celbuild.Expr
	checks []typed.Check
	any    bool
}

func translateTyped(b *celbuild.Builder, t *typed.Translator, v *kyvernov1.Validation, root celbuild.Expr, n kubeschema.Node) (typedOutcome, error) {
	if p := v.GetPattern(); p != nil {
		c, err := t.Pattern(p, root, n)
		if err != nil {
			return typedOutcome{}, err
		}
		return typedOutcome{ok: c.OK, checks: []typed.Check{c}}, nil
	}
	ps, _ := v.GetAnyPattern().([]any)
	if len(ps) == 0 {
		return typedOutcome{}, errors.New("an empty anyPattern")
	}
	out := typedOutcome{any: true}
	var oks []celbuild.Expr
	for _, p := range ps {
		c, err := t.Pattern(p, root, n)
		if err != nil {
			return typedOutcome{}, err
		}
		out.checks = append(out.checks, c)
		oks = append(oks, c.OK)
	}
	out.ok = b.Or(oks...)
	return out, nil
}

// message is Kyverno's violation message (buildErrorMessage): for a
// pattern "validation error: MESSAGE. rule RULE failed at path PATH", for
// an anyPattern every pattern's "rule RULE[i] failed at path PATH".
func (o typedOutcome) message(b *celbuild.Builder, rule, message string) celbuild.Expr {
	prefix := "validation error: "
	if message != "" {
		if !strings.HasSuffix(message, ".") {
			message += "."
		}
		prefix += message + " "
	}
	if !o.any {
		return b.Add(b.String(prefix+"rule "+rule+" failed at path "), o.checks[0].Path)
	}
	var out celbuild.Expr
	for i, c := range o.checks {
		lead := "rule " + rule + "[" + strconv.Itoa(i) + "] failed at path "
		if i == 0 {
			lead = prefix + lead
		} else {
			lead = " " + lead
		}
		part := b.Add(b.String(lead), c.Path)
		if out == nil {
			out = part
		} else {
			out = b.Add(out, part)
		}
	}
	return out
}

// ruleSchemas are the schemas of the kinds a rule matches: every kind of
// its match filters, each a built-in kind (a wildcard, a kind admitc does
// not know or an exclude that names kinds gives none).
func ruleSchemas(rule kyvernov1.Rule) []kubeschema.Node {
	var out []kubeschema.Node
	for _, f := range filters(&rule.MatchResources) {
		if len(f.Kinds) == 0 {
			return nil
		}
		for _, k := range f.Kinds {
			g, ver, kind, _ := parseKindSelector(k)
			if hasWildcard(kind) || hasWildcard(ver) && ver != "*" || hasWildcard(g) && g != "*" {
				return nil
			}
			res := apiresources.ByKind(g, kind)
			if len(res) == 0 {
				return nil
			}
			for _, r := range res {
				version := r.Version
				if ver != "*" {
					version = ver
				}
				n, ok := schemas.Schema(schema.GroupVersionKind{Group: r.Group, Version: version, Kind: kind})
				if !ok {
					return nil
				}
				out = append(out, n)
			}
		}
	}
	return out
}
