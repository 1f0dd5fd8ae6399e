package kyverno

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common/ast"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/compiler/kyverno/typed"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A foreach rule's entries are written against the schema of the rule's
// kinds as comprehensions over the object's lists: the rule fails when an
// element of an entry's list, its preconditions holding, fails the entry's
// deny conditions or pattern (object.spec.containers.exists(container,
// ...)); the message is the first failing element's, computed only on
// failure. What Kyverno reports besides pass and fail (no element
// validated: no response) is an offline annotation. The exact dynamic
// translation stays the policy's Dynamic form. A foreach nested one
// level is a comprehension inside the outer one; deeper nesting and entry
// context keep the exact form. Deny conditions that fail evaluation where
// a field they read strictly is missing are taken: exists() would absorb
// one element's error, so the elements that do not pass are listed in
// Kyverno's order ('fail' or 'error', FailuresVariable) and the first
// decides. Other checks that can fail evaluation keep the exact form
// (Kyverno's images that do not parse are taken where every element fails
// alike).

// typedForEachRule is pol, a lowered foreach rule, written against the
// schema of its kinds; nil when it holds what the typed translation does
// not take.
func (r *reader) typedForEachRule(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool) *ir.Policy {
	return r.typedRule(pol, c, isForEachVariable, func(n kubeschema.Node, context []conditions.Variable) (*ir.Policy, error) {
		return typedForEachWith(pol, c, m, enforce, n, context)
	})
}

func isForEachVariable(name string) bool {
	switch name {
	case ForEachVariable, ForEachBeforeVariable, OutcomeVariable, conditions.ImagesVariable:
		return true
	}
	for _, p := range []string{ListVariable, EntryVariable, BeforeEntryVariable} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// foreachOutcome is a foreach rule's entries over one object: fails when
// an element fails, counted when an element was validated (passed or
// failed), message the first failure's.
type foreachOutcome struct {
	fails   celbuild.Expr
	counted celbuild.Expr
	message celbuild.Expr
	// failures, when not nil, is the list of the elements that do not
	// pass, in Kyverno's order, each 'fail' or, where its deny conditions
	// fail evaluation, Kyverno's error: the first decides. It stands for
	// fails where an element's evaluation may fail, which exists() would
	// absorb.
	failures celbuild.Expr
}

// elementFails is a failing element in a foreach's failures list.
const elementFails = "fail"

func typedForEachWith(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool, n kubeschema.Node, context []conditions.Variable) (*ir.Policy, error) {
	b := celbuild.New()
	t := typed.NewTranslator(b)
	if err := t.SetContext(context); err != nil {
		return nil, err
	}
	out := *pol
	if err := typedPreconditions(&out, c, b, t, n); err != nil {
		return nil, err
	}
	v := c.rule.Validation
	resource := requestObject(b, &out)
	var resourceVar []ir.NamedExpression
	if _, _, _, ok := b.AsTernary(resource); ok {
		resourceVar = []ir.NamedExpression{{Name: ResourceVariable, Expression: b.MustPrint(resource), Origin: pol.Origin}}
		resource = b.Select(b.Ident("variables"), ResourceVariable)
	}
	images := podImages(b, c, n)
	now, err := typedForEach(b, t, c, v, withContextObject(typed.Roots{Object: resource, Node: n, Operation: operation(b), Images: images}), b.Ident("object"))
	if err != nil {
		return nil, err
	}
	if slices.Contains(operationsOf(out.MatchConstraints), ir.Delete) || operationsOf(out.MatchConstraints) == nil {
		// On DELETE Kyverno queries the lists on a null object: nothing
		// is validated.
		notDelete := b.Ne(operation(b), b.String(string(ir.Delete)))
		now.fails, now.counted = b.And(notDelete, now.fails), b.And(notDelete, now.counted)
		if now.failures != nil {
			now.failures = b.Ternary(notDelete, now.failures, b.List())
		}
	}
	var failures []ir.NamedExpression
	// nowErrs is where the rule errs (nil: never), with Kyverno's error
	// nowErrText.
	var nowErrs, nowErrText celbuild.Expr
	if now.failures != nil {
		// The elements that do not pass are listed once, in a variable:
		// the first decides whether the rule fails or errs.
		failures = append(failures, ir.NamedExpression{Name: FailuresVariable, Expression: b.MustPrint(now.failures), Origin: pol.Origin})
		list := b.Select(b.Ident("variables"), FailuresVariable)
		now.fails = b.Compare(">", b.Size(list), b.Int(0))
		nowErrs = b.And(now.fails, b.Ne(b.Index(list, b.Int(0)), b.String(elementFails)))
		nowErrText = b.Index(list, b.Int(0))
	}
	existing := celbuild.Expr(b.Bool(false))
	// beforeFails and guard, when set, are when the old object fails and
	// when it counts (allowExistingViolations).
	var beforeFails, guard celbuild.Expr
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		oldRoot := b.Ident("oldObject")
		// Kyverno's images are the new object's, also on the old one.
		before, err := typedForEach(b, t, c, v, withContextObject(typed.Roots{Object: oldRoot, Node: n, Operation: b.String(string(ir.Create)), Images: images, OldElements: true}), oldRoot)
		if err != nil {
			return nil, err
		}
		if guard, err = b.Parse(existingViolationGuard(m)); err != nil {
			return nil, err
		}
		if c.rule.RawAnyAllConditions != nil {
			pre, err := conditions.Decode(c.rule.GetAnyAllConditions())
			if err != nil {
				return nil, err
			}
			held, err := t.Conditions(pre, withContextObject(typed.Roots{Object: oldRoot, Node: n, Operation: b.String(string(ir.Create))}))
			if err != nil || held.MayErr {
				return nil, fmt.Errorf("the preconditions on the old object: %v", err)
			}
			guard = b.And(guard, held.Holds)
		}
		// Only a failure on the old object, not an error, lets the new
		// one's failure pass.
		beforeFails = before.fails
		if before.failures != nil {
			failures = append(failures, ir.NamedExpression{Name: OldFailuresVariable, Expression: b.MustPrint(before.failures), Origin: pol.Origin})
			list := b.Select(b.Ident("variables"), OldFailuresVariable)
			beforeFails = b.And(b.Compare(">", b.Size(list), b.Int(0)), b.Eq(b.Index(list, b.Int(0)), b.String(elementFails)))
		}
		existing = b.And(guard, beforeFails)
	}
	out.Variables, out.AuditAnnotations, out.OfflineAnnotations = append(resourceVar, failures...), nil, nil
	valid := b.Or(b.Not(now.fails), existing)
	// The lists are read from the object (on DELETE, where the old
	// object is Kyverno's request.object, nothing is validated); the
	// entries' conditions read Kyverno's request.object.
	for _, root := range []celbuild.Expr{b.Ident("object"), resource} {
		if len(failures) > 0 {
			break
		}
		if once, ok := eitherObjectValid(b, root, now.fails, beforeFails, guard, containerPairs(b, t)); ok {
			valid = once
			break
		}
	}
	nowFails := now.fails
	if nowErrs != nil {
		// The first element that does not pass fails evaluation: the
		// rule errs, as Kyverno's does, with its error (a key no map
		// has).
		valid = b.Ternary(nowErrs, b.Index(b.MapLiteral(), nowErrText), valid)
		nowFails = b.And(b.Not(nowErrs), nowFails)
	}
	skipped := b.Ternary(b.And(nowFails, existing), b.String(offlineSkipReason), b.String(""))
	none := b.Ternary(b.Or(now.fails, now.counted), b.String(""), b.String("no element of the foreach lists was validated"))
	if !celbuild.IsFalse(existing) {
		out.OfflineAnnotations = append(out.OfflineAnnotations, ir.AuditAnnotation{Key: SkipAnnotation, ValueExpression: b.MustPrint(skipped), Origin: pol.Origin})
	}
	out.OfflineAnnotations = append(out.OfflineAnnotations, ir.AuditAnnotation{Key: NoResponseAnnotation, ValueExpression: b.MustPrint(none), Origin: pol.Origin})
	val := ir.Validation{Expression: b.MustPrint(valid), Origin: pol.Validations[0].Origin}
	if lit, ok := stringLiteral(now.message); ok {
		val.Message = lit
	} else {
		val.Message = pol.Validations[0].Message
		val.MessageExpression = b.MustPrint(now.message)
		val.MessageExpressionOrigin = pol.Validations[0].MessageExpressionOrigin
	}
	out.Validations = []ir.Validation{val}
	if !readsResource(&out) && !slices.ContainsFunc(failures, func(v ir.NamedExpression) bool {
		return strings.Contains(v.Expression, "variables."+ResourceVariable)
	}) {
		out.Variables = failures
	}
	if err := withImagesVariables(&out, t, images); err != nil {
		return nil, err
	}
	out.SchemaReads = t.Reads()
	dynamic := *pol
	out.Dynamic = &dynamic
	return &out, nil
}

// depthOf is how many foreach levels an element's error comes through,
// each adding "validation failure: " before it.
func depthOf(roots typed.Roots) int {
	if roots.Element != nil {
		return 2
	}
	return 1
}

// elementValueTexts are the {{ }} values of a foreach entry's pattern (or
// anyPattern), in the order the exact translation reads them (each
// pattern's keys sorted, after its $( ) references), each with the JSON
// pointer of its first place.
func elementValueTexts(v *kyvernov1.Validation) ([]typed.ElementValueText, error) {
	doc, err := resolvedPattern(v)
	if err != nil {
		return nil, err
	}
	var out []typed.ElementValueText
	seen := map[string]bool{}
	err = pattern.EachValueAt(doc, func(text, _, pointer string) error {
		if !seen[text] {
			seen[text] = true
			out = append(out, typed.ElementValueText{Text: text, Pointer: pointer})
		}
		return nil
	})
	return out, err
}

// stringLiteral is the text of a string literal.
func stringLiteral(e celbuild.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}

// typedForEach is a foreach rule's entries on the object: listRoot is what
// the lists read (Kyverno queries them on the object as it is), roots what
// the checks' request.object reads.
func typedForEach(b *celbuild.Builder, t *typed.Translator, c computedRule, v *kyvernov1.Validation, roots typed.Roots, listRoot celbuild.Expr) (foreachOutcome, error) {
	var fails, counted, messages []celbuild.Expr
	// outcomes are each entry's failures list (nil: the entry's
	// elements never fail evaluation).
	var outcomes []celbuild.Expr
	for i := range v.ForEachValidation {
		fe := &v.ForEachValidation[i]
		if len(fe.Context) > 0 || fe.List == "" {
			return foreachOutcome{}, fmt.Errorf("entry %d: context or no list", i)
		}
		if roots.Element != nil && len(fe.GetForEachValidation()) > 0 {
			return foreachOutcome{}, fmt.Errorf("entry %d: a foreach nested twice", i)
		}
		listRoots := roots
		listRoots.Object = listRoot
		loop, err := t.ForEachList(fe.List, listRoots)
		if err != nil {
			return foreachOutcome{}, err
		}
		el := loop.Element()
		inner := roots
		inner.Element = &el
		pre := celbuild.Expr(b.Bool(true))
		if fe.AnyAllConditions != nil {
			held, err := t.Conditions(*fe.AnyAllConditions, inner)
			if err != nil {
				return foreachOutcome{}, err
			}
			if held.MayErr {
				return foreachOutcome{}, fmt.Errorf("entry %d: preconditions that may fail", i)
			}
			pre = held.Holds
			if len(held.Known) > 0 {
				// The checks run where the preconditions hold: what they
				// hold only where present is read without a test.
				guarded := el
				guarded.Known = append(slices.Clone(el.Known), held.Known...)
				inner.Element = &guarded
			}
		}
		scope := el.Node.Shape() == kubeschema.Object || el.Node.Shape() == kubeschema.Map
		if fe.ElementScope != nil && *fe.ElementScope != scope {
			return foreachOutcome{}, fmt.Errorf("entry %d: elementScope on elements of another shape", i)
		}
		var bad, validated, message func(elem typed.Root) (celbuild.Expr, error)
		// elemFailures, when not nil, is an element's failures list
		// (['error'] where its evaluation fails, ['fail'] where it fails).
		var elemFailures celbuild.Expr
		// errs, when not nil, is where an element errs; the elements
		// before the first that fails neither err nor fail.
		var errs celbuild.Expr
		switch {
		case fe.Deny != nil:
			conds, err := conditions.Decode(fe.Deny.GetAnyAllConditions())
			if err != nil {
				return foreachOutcome{}, err
			}
			// Kyverno's images that do not parse fail an element whose
			// conditions read them: every element that gets there (the
			// first of them decides), when each condition reads them and
			// the entry is the rule's only one.
			held, readsImages, ok, err := t.ConditionsOnParsedImages(conds, inner)
			if err != nil {
				return foreachOutcome{}, err
			}
			if !ok || readsImages && (len(v.ForEachValidation) > 1 || roots.Element != nil) {
				return foreachOutcome{}, fmt.Errorf("entry %d: deny conditions that read the images in part, or in one of several entries", i)
			}
			if held.MayErr {
				if held.Errs == nil || readsImages {
					return foreachOutcome{}, fmt.Errorf("entry %d: deny conditions that may fail", i)
				}
				// Kyverno's error, with "validation failure: " for each
				// foreach level it comes through.
				errText := b.Add(b.String(strings.Repeat("validation failure: ", depthOf(roots))+"failed to check deny conditions: "), held.ErrText)
				if roots.OldElements {
					// On the old object, only whether it errs counts.
					errText = b.String("error")
				}
				elemFailures = b.Ternary(b.And(pre, held.Errs), b.List(errText),
					b.Ternary(b.And(pre, held.Holds), b.List(b.String(elementFails)), b.List()))
			}
			msgs := conditions.DenyMessages(v.Message, c.rule.Name, conditions.HeldMessages(conds, conditions.IsList(fe.Deny.GetAnyAllConditions())))
			if len(msgs) != 1 {
				return foreachOutcome{}, fmt.Errorf("entry %d: several condition messages", i)
			}
			bad = func(typed.Root) (celbuild.Expr, error) { return b.And(pre, held.Holds), nil }
			validated = func(typed.Root) (celbuild.Expr, error) { return pre, nil }
			message = func(first typed.Root) (celbuild.Expr, error) {
				at := roots
				at.Element = &first
				m, err := t.Message(msgs[0], at)
				if err != nil {
					return nil, err
				}
				if lit, ok := stringLiteral(m); ok {
					return b.String("validation failure: " + lit), nil
				}
				return b.Add(b.String("validation failure: "), m), nil
			}
		case fe.GetPattern() != nil || fe.GetAnyPattern() != nil:
			if !scope {
				return foreachOutcome{}, fmt.Errorf("entry %d: a pattern on elements that are not maps", i)
			}
			tv := &kyvernov1.Validation{RawPattern: fe.RawPattern, RawAnyPattern: fe.RawAnyPattern}
			texts, err := elementValueTexts(tv)
			if err != nil {
				return foreachOutcome{}, err
			}
			// The pattern's {{ }} values are read on the element the
			// pattern is matched with.
			bind := func(elem typed.Root) (typed.ElementValues, error) {
				if len(texts) == 0 {
					return typed.ElementValues{}, nil
				}
				at := inner
				at.Element = &elem
				return t.ReadElementValues(texts, at)
			}
			// The pattern is matched where the element does not err:
			// what its values read is there.
			check := func(elem typed.Root) (typedOutcome, typed.ElementValues, error) {
				values, err := bind(elem)
				if err != nil {
					return typedOutcome{}, values, err
				}
				elem.Known = append(slices.Clone(elem.Known), values.Known...)
				o, err := translateTypedAt(b, t, tv, elem)
				return o, values, err
			}
			o, values, err := check(*inner.Element)
			if err != nil {
				return foreachOutcome{}, err
			}
			if values.Errs != nil && o.skip != nil {
				// Whether an element is validated is asked of every
				// element, erring ones too.
				return foreachOutcome{}, fmt.Errorf("entry %d: conditional anchors with values that may not resolve", i)
			}
			if values.Errs != nil {
				// An element errs where a value does not resolve (or is
				// not plain), before its pattern is matched.
				errs = b.And(pre, values.Errs)
				errText := b.Add(b.String(strings.Repeat("validation failure: ", depthOf(roots))), values.ErrText)
				if roots.OldElements {
					errText = b.String("error")
				}
				elemFailures = b.Ternary(errs, b.List(errText),
					b.Ternary(b.And(pre, o.bad), b.List(b.String(elementFails)), b.List()))
			}
			bad = func(typed.Root) (celbuild.Expr, error) { return b.And(pre, o.bad), nil }
			validated = func(typed.Root) (celbuild.Expr, error) {
				if o.skip == nil {
					return pre, nil
				}
				return b.And(pre, b.Not(o.skip)), nil
			}
			message = func(first typed.Root) (celbuild.Expr, error) {
				of, _, err := check(first)
				if err != nil {
					return nil, err
				}
				m, ok := of.messageWith(b, t, roots, c.rule.Name, v.Message)
				if !ok {
					return nil, fmt.Errorf("entry %d: the rule's message", i)
				}
				return b.Add(b.String("validation failure: "), m), nil
			}
		case len(fe.GetForEachValidation()) > 0:
			// A nested foreach on the element: it fails where one of its
			// elements fails ("validation failure: " before its message
			// again), and counts the element where one of its elements
			// counted (an empty one does not).
			sub := &kyvernov1.Validation{Message: v.Message, ForEachValidation: fe.GetForEachValidation()}
			nestedOn := func(elem typed.Root) (foreachOutcome, error) {
				at := roots
				at.Element = &elem
				return typedForEach(b, t, c, sub, at, listRoot)
			}
			o, err := nestedOn(el)
			if err != nil {
				return foreachOutcome{}, fmt.Errorf("entry %d: %w", i, err)
			}
			bad = func(typed.Root) (celbuild.Expr, error) { return b.And(pre, o.fails), nil }
			validated = func(typed.Root) (celbuild.Expr, error) { return b.And(pre, o.counted), nil }
			if o.failures != nil {
				elemFailures = b.Ternary(pre, o.failures, b.List())
			}
			message = func(first typed.Root) (celbuild.Expr, error) {
				of, err := nestedOn(first)
				if err != nil {
					return nil, err
				}
				if lit, ok := stringLiteral(of.message); ok {
					return b.String("validation failure: " + lit), nil
				}
				return b.Add(b.String("validation failure: "), of.message), nil
			}
		default:
			return foreachOutcome{}, fmt.Errorf("entry %d: no deny or pattern", i)
		}
		e, err := bad(el)
		if err != nil {
			return foreachOutcome{}, err
		}
		counts, err := validated(el)
		if err != nil {
			return foreachOutcome{}, err
		}
		msg, err := message(el)
		if err != nil {
			return foreachOutcome{}, err
		}
		if loop.Uses(msg) {
			// The message reads the element: the first that fails. Where
			// elements may fail evaluation, a later one could fail the
			// message too.
			switch {
			case errs != nil:
				// The first element that errs or fails, taken before the
				// message reads it (a later one may err): the message is
				// shown only where it fails.
				msg = loop.FirstOnlyMap(b.Or(errs, e), msg)
			case elemFailures != nil:
				return foreachOutcome{}, fmt.Errorf("entry %d: a message on elements that may fail evaluation", i)
			default:
				msg = loop.FirstMap(e, msg)
			}
			if msg == nil {
				return foreachOutcome{}, fmt.Errorf("entry %d: a message on an element of nested lists", i)
			}
		}
		var fail, entryFailures celbuild.Expr
		if elemFailures != nil {
			// Kyverno stops at the first element that does not pass,
			// whether it fails or errs.
			entryFailures = loop.Concat(elemFailures)
			fail = b.Compare(">", b.Size(entryFailures), b.Int(0))
		} else {
			fail = loop.Exists(e)
		}
		fails = append(fails, fail)
		outcomes = append(outcomes, entryFailures)
		counted = append(counted, loop.Exists(counts))
		messages = append(messages, msg)
	}
	if len(fails) == 0 {
		return foreachOutcome{}, fmt.Errorf("no entry")
	}
	msg := messages[len(messages)-1]
	for i := len(messages) - 2; i >= 0; i-- {
		msg = b.Ternary(fails[i], messages[i], msg)
	}
	out := foreachOutcome{fails: b.Or(fails...), counted: b.Or(counted...), message: msg}
	if slices.ContainsFunc(outcomes, func(e celbuild.Expr) bool { return e != nil }) {
		// The entries' lists in order: the first entry that does not
		// pass decides.
		var lists []celbuild.Expr
		for i, l := range outcomes {
			if l == nil {
				l = b.Ternary(fails[i], b.List(b.String(elementFails)), b.List())
			}
			lists = append(lists, l)
		}
		out.failures = lists[0]
		for _, l := range lists[1:] {
			out.failures = b.Add(out.failures, l)
		}
	}
	return out, nil
}
