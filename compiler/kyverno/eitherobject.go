package kyverno

import (
	"regexp"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"

	"github.com/admitc/admitc/compiler/kyverno/typed"
	"github.com/admitc/admitc/internal/celbuild"
)

// An Enforce rule lets an UPDATE whose old object violates it too pass
// (allowExistingViolations): the validation is
//
//	!bad(object) || guard && bad(oldObject)
//
// Where the old object's test is the new one's read from the old object,
// it is written once, over both objects:
//
//	[object, oldObject].exists(i, o, (i == 0 || guard) && !bad(o) == (i == 0))
//
// (the object passes, or the guard holds and the old object did not),
// which decides alike (exists, like ||, passes where one element passes
// whatever the other's error, and reads the old object only where the new
// one fails), costs the same, and is shorter by about the test's length.
// On CREATE the old object is null; the guard (an UPDATE) is false there,
// and false && an error is false, so it is never read.

// pairedName is a name a test reads through an identifier (a placeholder
// the caller later writes as a variable or in place) for the object, Now,
// and for the old object, Old. Inline, when set, is Now's value written
// over the loop's object o, used where the test reads Now once.
type pairedName struct {
	Now, Old string
	Inline   func(o celbuild.Expr) celbuild.Expr
}

// loopNames are the names of the loop over both objects: its index and
// its object.
const (
	eitherIndex  = "i"
	eitherObject = "o"
)

// loopName finds a use of the loop's names in a printed test.
var loopName = regexp.MustCompile(`\b[` + eitherIndex + eitherObject + `]\b`)

// eitherObjectValid is !bad || guard && before written once over both
// objects, where guard implies an UPDATE (existingViolationGuard), bad
// reading the object as root (object, or variables.resource:
// the object, or on DELETE the old object); false when before is not bad
// read from the old object (root for oldObject, each pair's Now for its
// Old), bad does not read root or uses the loop's names, or the loop is
// not shorter (shorter).
func eitherObjectValid(b *celbuild.Builder, root, bad, before, guard celbuild.Expr, pairs []pairedName) (celbuild.Expr, bool) {
	if bad == nil || before == nil || guard == nil {
		return nil, false
	}
	var replaceRoot func(e, with celbuild.Expr) celbuild.Expr
	switch {
	case root.Kind() == ast.IdentKind:
		replaceRoot = func(e, with celbuild.Expr) celbuild.Expr { return b.Substitute(e, root.AsIdent(), with) }
	case root.Kind() == ast.SelectKind && root.AsSelect().Operand().Kind() == ast.IdentKind && !root.AsSelect().IsTestOnly():
		replaceRoot = func(e, with celbuild.Expr) celbuild.Expr {
			return b.SubstituteField(e, root.AsSelect().Operand().AsIdent(), root.AsSelect().FieldName(), with)
		}
	default:
		return nil, false
	}
	old := replaceRoot(bad, b.Ident("oldObject"))
	reads := !b.Same(old, bad)
	// inline says a pair's Now, read once, is written in place.
	inline := make([]bool, len(pairs))
	for k, p := range pairs {
		old = b.Substitute(old, p.Now, b.Ident(p.Old))
		uses := b.Uses(bad, p.Now)
		reads = reads || uses > 0
		inline[k] = p.Inline != nil && uses == 1
	}
	// The guard is an UPDATE: where the test holds on operations but
	// DELETE only, it is the old object's test all the same.
	var kept []celbuild.Expr
	for _, c := range celbuild.Conjuncts(old) {
		if text, err := b.Print(c); err != nil || text != `request.operation != "DELETE"` {
			kept = append(kept, c)
		}
	}
	text, err := b.Print(bad)
	if !reads || err != nil || loopName.MatchString(text) || b.Uses(bad, "oldObject") > 0 || !b.Same(b.And(kept...), before) {
		return nil, false
	}
	o, i := b.Ident(eitherObject), b.Ident(eitherIndex)
	body := replaceRoot(bad, o)
	for k, p := range pairs {
		with := b.Ternary(b.Eq(i, b.Int(0)), b.Ident(p.Now), b.Ident(p.Old))
		if inline[k] {
			with = p.Inline(o)
		}
		body = b.Substitute(body, p.Now, with)
	}
	isNew := b.Eq(i, b.Int(0))
	pred := b.And(b.Or(isNew, guard), b.Call(operators.Equals, b.Not(body), isNew))
	once := b.ExistsIndexed(b.List(root, b.Ident("oldObject")), eitherIndex, eitherObject, pred)
	// Measured against the two clauses as they print: a list read once
	// in place there too.
	twice := b.Or(b.Not(bad), b.And(guard, before))
	for k, p := range pairs {
		if inline[k] {
			twice = b.Substitute(b.Substitute(twice, p.Now, p.Inline(root)), p.Old, p.Inline(b.Ident("oldObject")))
		}
	}
	return once, shorter(b, once, twice)
}

// shorter says whether x prints at least a tenth shorter than y: a
// test of a field or two reads better written twice than through the
// loop.
func shorter(b *celbuild.Builder, x, y celbuild.Expr) bool {
	px, errx := b.Print(x)
	py, erry := b.Print(y)
	return errx == nil && erry == nil && 10*len(px) <= 9*len(py)
}

// containerPairs are the object's and the old object's container lists
// that t reads through placeholders (typed.Translator.ContainerLists): the
// object's, read once, is written in place over the loop's object.
func containerPairs(b *celbuild.Builder, t *typed.Translator) []pairedName {
	var now, old *typed.ContainerList
	for _, l := range t.ContainerLists() {
		switch l.Name {
		case "allContainers":
			now = &l
		case "oldAllContainers":
			old = &l
		}
	}
	if now == nil || old == nil {
		return nil
	}
	expr := now.Expr
	return []pairedName{{Now: now.Placeholder, Old: old.Placeholder, Inline: func(o celbuild.Expr) celbuild.Expr {
		return b.Substitute(expr, "object", o)
	}}}
}
