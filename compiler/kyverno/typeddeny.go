package kyverno

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common/ast"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/typed"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A deny rule's conditions, and any rule's JMESPath preconditions, are
// written against the schema of the rule's kinds as a person writes them
// (compiler/kyverno/typed: object.spec.type == 'NodePort'), the exact
// dynamic translation kept as the policy's Dynamic form, as for pattern
// rules. A precondition on request.operation becomes the operations the
// policy matches. What the typed translation does not take keeps the
// exact form.

// ResourceVariable names the variable of a typed rule that reads
// Kyverno's request.object: the object, or on DELETE the old object.
const ResourceVariable = "resource"

// allOperations are the operations Kyverno's webhooks send.
var allOperations = []ir.Operation{ir.Create, ir.Update, ir.Delete, ir.Connect}

// typedDenyRule is pol, a lowered deny rule, with its conditions written
// against the schema of its kinds; nil when they hold what the typed
// translation does not take.
func (r *reader) typedDenyRule(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool) *ir.Policy {
	return r.typedRule(pol, c, named(DenyVariable, DenyBeforeVariable, OutcomeVariable, conditions.ImagesVariable), func(n kubeschema.Node, context []conditions.Variable) (*ir.Policy, error) {
		return typedDenyWith(pol, c, m, enforce, n, context)
	})
}

func typedDenyWith(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool, n kubeschema.Node, context []conditions.Variable) (*ir.Policy, error) {
	b := celbuild.New()
	t := typed.NewTranslator(b)
	if err := t.SetContext(context); err != nil {
		return nil, err
	}
	out := *pol
	if err := typedPreconditions(&out, c, b, t, n); err != nil {
		return nil, err
	}
	conds, err := conditions.Decode(c.rule.Validation.Deny.GetAnyAllConditions())
	if err != nil {
		return nil, err
	}
	root := requestObject(b, &out)
	var resource []ir.NamedExpression
	if _, _, _, ok := b.AsTernary(root); ok {
		// The object, or on DELETE the object deleted: one variable.
		resource = []ir.NamedExpression{{Name: ResourceVariable, Expression: b.MustPrint(root), Origin: pol.Origin}}
		root = b.Select(b.Ident("variables"), ResourceVariable)
	}
	images := podImages(b, c, n)
	isDelete := b.Eq(operation(b), b.String(string(ir.Delete)))
	roots := withContextObject(typed.Roots{Object: root, Node: n, Operation: operation(b), Images: images})
	deny, err := t.Conditions(conds, roots)
	// The conditions on any operation but DELETE: the old object is
	// judged on UPDATE only.
	read := deny
	// onDelete, when set, are the roots of the conditions written apart
	// for DELETE: where they do not translate over the object or the old
	// object (a context entry's own query of request.object, which reads
	// null on DELETE), they are written on the old object for DELETE,
	// with that query null and no images, and on the object otherwise.
	var onDelete *typed.Roots
	if err != nil && resource != nil {
		main := withContextObject(typed.Roots{Object: b.Ident("object"), Node: n, Operation: operation(b), Images: images})
		del := typed.Roots{Object: b.Ident("oldObject"), Node: n, Operation: b.String(string(ir.Delete)), NullContextObject: true, NoImages: true}
		onMain, errMain := t.Conditions(conds, main)
		onDel, errDel := t.Conditions(conds, del)
		if errMain != nil || errDel != nil {
			return nil, err
		}
		roots, onDelete, resource, root, err = main, &del, nil, b.Ident("object"), nil
		read = onMain
		deny = typed.Block{Holds: b.Cond(isDelete, onDel.Holds, onMain.Holds), MayErr: onMain.MayErr || onDel.MayErr}
	}
	if err != nil {
		return nil, err
	}
	if ops := operationsOf(out.MatchConstraints); onDelete == nil && t.UsedImages() && (ops == nil || slices.Contains(ops, ir.Delete)) {
		// On DELETE, where the object is null, Kyverno has no images.
		none, err := t.Conditions(conds, withContextObject(typed.Roots{Object: root, Node: n, Operation: operation(b), NoImages: true}))
		if err != nil {
			return nil, err
		}
		deny = typed.Block{Holds: b.Cond(isDelete, none.Holds, deny.Holds), MayErr: deny.MayErr || none.MayErr}
	}
	existing := celbuild.Expr(b.Bool(false))
	// once, when set, is the validation written once over both objects
	// (eitherObjectValid).
	var once celbuild.Expr
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		// Kyverno's images are the new object's, also on the old one.
		old := withContextObject(typed.Roots{Object: b.Ident("oldObject"), Node: n, Operation: b.String(string(ir.Create)), Images: images})
		before, err := t.Conditions(conds, old)
		if err != nil {
			return nil, err
		}
		guard, err := b.Parse(existingViolationGuard(m))
		if err != nil {
			return nil, err
		}
		if c.rule.RawAnyAllConditions != nil {
			pre, err := conditions.Decode(c.rule.GetAnyAllConditions())
			if err != nil {
				return nil, err
			}
			held, err := t.Conditions(pre, old)
			if err != nil {
				return nil, err
			}
			guard = b.And(guard, held.Holds)
		}
		existing = b.Ternary(guard, before.Holds, b.Bool(false))
		switch {
		case b.Same(before.Holds, read.Holds):
			// The conditions do not read the object: an UPDATE that
			// violates them violated them before (existing is only
			// evaluated where the conditions held).
			existing = guard
		case !before.MayErr:
			existing = b.And(guard, before.Holds)
			if loop, ok := eitherObjectValid(b, root, deny.Holds, before.Holds, guard, nil); ok && !deny.MayErr {
				once = loop
			}
		}
	}
	valid := b.Or(b.Not(deny.Holds), existing)
	if deny.MayErr {
		valid = b.Ternary(deny.Holds, existing, b.Bool(true))
	}
	if once != nil {
		valid = once
	}
	out.Variables, out.AuditAnnotations, out.OfflineAnnotations = resource, nil, nil
	if !celbuild.IsFalse(existing) {
		skipped := b.Ternary(b.And(deny.Holds, existing), b.String(offlineSkipReason), b.String(""))
		out.OfflineAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: b.MustPrint(skipped), Origin: pol.Origin}}
	}
	val := pol.Validations[0]
	val.Expression = b.MustPrint(valid)
	if val.MessageExpression != "" {
		m, ok := typedDenyMessage(c, b, t, roots)
		if ok && onDelete != nil {
			var del celbuild.Expr
			del, ok = typedDenyMessage(c, b, t, *onDelete)
			m = b.Ternary(isDelete, del, m)
		}
		if ok {
			val.MessageExpression = b.MustPrint(m)
		}
	}
	out.Validations = []ir.Validation{val}
	if !readsResource(&out) {
		out.Variables = nil
	}
	if err := withImagesVariables(&out, t, images); err != nil {
		return nil, err
	}
	out.SchemaReads = t.Reads()
	dynamic := *pol
	out.Dynamic = &dynamic
	return &out, nil
}

// podImages is what Kyverno's images variable reads in a typed rule: the
// pod spec of the rule's kinds, which must keep it at one path (nil when
// they do not), read from the object, as Kyverno reads it: on DELETE,
// where the object is null, a read of the images fails, as Kyverno's
// images are missing there.
func podImages(b *celbuild.Builder, c computedRule, n kubeschema.Node) *typed.Images {
	var path []string
	for _, f := range filters(&c.rule.MatchResources) {
		for _, k := range f.Kinds {
			_, _, kind, _ := parseKindSelector(k)
			p := conditions.PodSpecPath(kind)
			if p == nil || path != nil && !slices.Equal(p, path) {
				return nil
			}
			path = p
		}
	}
	if path == nil {
		return nil
	}
	spec, node := b.Ident("object"), n
	for _, f := range path {
		child, ok := node.Field(f)
		if !ok {
			return nil
		}
		spec, node = b.Select(spec, f), child
	}
	return &typed.Images{Spec: spec, Node: node, Path: strings.Join(path, ".")}
}

// withImagesVariables gives pol, when it reads ImagesParseVariable, the
// variables of Kyverno's images.
func withImagesVariables(pol *ir.Policy, t *typed.Translator, images *typed.Images) error {
	if !readsVariable(pol, typed.ImagesParseVariable) {
		return nil
	}
	refs, parse, err := t.ImagesVariables(images)
	if err != nil {
		return err
	}
	b := t.Builder()
	pol.Variables = append(pol.Variables,
		ir.NamedExpression{Name: typed.ImagesVariable, Expression: b.MustPrint(refs), Origin: pol.Origin},
		ir.NamedExpression{Name: typed.ImagesParseVariable, Expression: b.MustPrint(parse), Origin: pol.Origin})
	return nil
}

// readsResource says an expression of pol reads the resource variable.
func readsResource(pol *ir.Policy) bool { return readsVariable(pol, ResourceVariable) }

// readsVariable says an expression of pol reads the variable name.
func readsVariable(pol *ir.Policy, name string) bool {
	ref := "variables." + name
	for _, v := range pol.Validations {
		if strings.Contains(v.Expression, ref) || strings.Contains(v.MessageExpression, ref) {
			return true
		}
	}
	for _, a := range append(slices.Clone(pol.AuditAnnotations), pol.OfflineAnnotations...) {
		if strings.Contains(a.ValueExpression, ref) {
			return true
		}
	}
	return false
}

// typedDenyMessage is the deny rule's message with its {{ }} variables
// read against the schema, when the rule has one message (see
// denyMessage).
func typedDenyMessage(c computedRule, b *celbuild.Builder, t *typed.Translator, roots typed.Roots) (celbuild.Expr, bool) {
	raw := c.rule.Validation.Deny.GetAnyAllConditions()
	conds, err := conditions.Decode(raw)
	if err != nil {
		return nil, false
	}
	msgs := conditions.DenyMessages(c.rule.Validation.Message, c.rule.Name, conditions.HeldMessages(conds, conditions.IsList(raw)))
	if len(msgs) != 1 {
		return nil, false
	}
	m, err := t.Message(msgs[0], roots)
	return m, err == nil
}

// withContextObject is r with what a context entry's own query reads as
// request.object: the object itself when r reads a plain object or old
// object; none when it reads the object of a policy that matches DELETE,
// where Kyverno's query reads null but its substitutions the old object.
func withContextObject(r typed.Roots) typed.Roots {
	if r.Object != nil && r.Object.Kind() == ast.IdentKind {
		r.ContextObject = r.Object
	}
	return r
}

func operation(b *celbuild.Builder) celbuild.Expr {
	return b.Select(b.Ident("request"), "operation")
}

// requestObject is what Kyverno's request.object reads in a policy's
// queries: the object, or on DELETE (when the policy matches it) the old
// object.
func requestObject(b *celbuild.Builder, pol *ir.Policy) celbuild.Expr {
	if !slices.Contains(operationsOf(pol.MatchConstraints), ir.Delete) && operationsOf(pol.MatchConstraints) != nil {
		return b.Ident("object")
	}
	return b.Ternary(b.Eq(operation(b), b.String(string(ir.Delete))), b.Ident("oldObject"), b.Ident("object"))
}

// typedPreconditions writes pol's JMESPath preconditions (its
// kyverno-preconditions match condition) against the schema n: leading
// conditions on request.operation become the operations pol matches, the
// rest typed; a precondition the typed translation does not take keeps
// its exact form.
func typedPreconditions(pol *ir.Policy, c computedRule, b *celbuild.Builder, t *typed.Translator, n kubeschema.Node) error {
	at := slices.IndexFunc(pol.MatchConditions, func(e ir.NamedExpression) bool { return e.Name == PreconditionsName })
	if at < 0 || c.rule.RawAnyAllConditions == nil {
		return nil
	}
	conds, err := conditions.Decode(c.rule.GetAnyAllConditions())
	if err != nil {
		return err
	}
	ops, rest, err := t.LeadingOperations(conds, operationsOrAll(pol.MatchConstraints))
	if err != nil {
		return err
	}
	ops, rest = t.HoistOperations(rest, ops, withContextObject(typed.Roots{Object: requestObject(b, pol), Node: n, Operation: operation(b)}))
	if len(ops) == 0 {
		return fmt.Errorf("the preconditions hold for no operation")
	}
	mcs := slices.Clone(pol.MatchConditions)
	withOps(pol, ops)
	if len(rest.AnyConditions) == 0 && rest.AnyConditions != nil || rest.AnyConditions == nil && len(rest.AllConditions) == 0 {
		if rest.AnyConditions != nil {
			// An empty any block never holds.
			return fmt.Errorf("an empty any block")
		}
		pol.MatchConditions = slices.Delete(mcs, at, at+1)
		return nil
	}
	held, err := t.Conditions(rest, withContextObject(typed.Roots{Object: requestObject(b, pol), Node: n, Operation: operation(b)}))
	if err != nil {
		// The exact form stays, with the operations narrowed.
		pol.MatchConditions = mcs
		return nil
	}
	mcs[at].Expression = b.MustPrint(held.Holds)
	pol.MatchConditions = mcs
	return nil
}

// operationsOrAll are the operations a policy matches.
func operationsOrAll(mc *ir.MatchResources) []ir.Operation {
	if ops := operationsOf(mc); ops != nil {
		return ops
	}
	return allOperations
}

// withOps narrows the operations of pol's rules to ops (a copy: the
// dynamic form keeps its own).
func withOps(pol *ir.Policy, ops []ir.Operation) {
	if pol.MatchConstraints == nil {
		return
	}
	mc := *pol.MatchConstraints
	mc.ResourceRules = nil
	for _, rr := range pol.MatchConstraints.ResourceRules {
		var kept []ir.Operation
		for _, op := range ops {
			if slices.Contains(rr.Operations, op) || slices.Contains(rr.Operations, "*") {
				kept = append(kept, op)
			}
		}
		if len(kept) == len(allOperations) {
			kept = []ir.Operation{"*"}
		}
		if len(kept) > 0 {
			rr.Operations = kept
			mc.ResourceRules = append(mc.ResourceRules, rr)
		}
	}
	pol.MatchConstraints = &mc
}
