// Package celbuild builds CEL expressions as cel-go abstract syntax trees
// and prints them with cel-go's unparser, so a translation composes and
// simplifies expressions instead of concatenating text: logical operators
// fold constants as they are built (true && x is x), a negated comparison
// is the opposite comparison, and macros (all, exists, map, filter,
// cel.bind) are built as the comprehensions the parser would expand them to,
// recorded so they print as written.
//
// It imports cel-go only. What it builds is checked by parsing and
// type-checking the printed text in the API server's environment
// (internal/celenv), as the API server itself reads it.
package celbuild

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/parser"
)

// Expr is a CEL expression being built.
type Expr = ast.Expr

// Builder makes expressions; the expressions of one builder share its ID
// space and its record of macro calls, so print them with the builder that
// made them.
type Builder struct {
	fac    ast.ExprFactory
	nextID int64
	info   *ast.SourceInfo
	// total are the filters (by comprehension ID) whose predicate never
	// fails (TotalFilter).
	total map[int64]bool
	// typedPresence says every presence test built reads an object of a
	// known schema, so it never fails (AssumeTypedPresence).
	typedPresence bool
}

// AssumeTypedPresence says every presence test the builder makes reads a
// value that is an object or a map (a typed translation, whose objects
// the schema or the runtime's shape check vouch for): such a test never
// fails, so the operands of && after has(x.f) may take it as true.
func (b *Builder) AssumeTypedPresence() { b.typedPresence = true }

// New returns an empty builder.
func New() *Builder {
	return &Builder{fac: ast.NewExprFactory(), info: ast.NewSourceInfo(nil), total: map[int64]bool{}}
}

func (b *Builder) id() int64 {
	b.nextID++
	return b.nextID
}

// Ident is a variable or a declared name.
func (b *Builder) Ident(name string) Expr { return b.fac.NewIdent(b.id(), name) }

// String is a string literal.
func (b *Builder) String(s string) Expr { return b.literal(types.String(s)) }

// Int is an int literal.
func (b *Builder) Int(n int64) Expr { return b.literal(types.Int(n)) }

// Double is a double literal.
func (b *Builder) Double(f float64) Expr { return b.literal(types.Double(f)) }

// Bool is true or false.
func (b *Builder) Bool(v bool) Expr { return b.literal(types.Bool(v)) }

// Null is null.
func (b *Builder) Null() Expr { return b.literal(types.NullValue) }

func (b *Builder) literal(v ref.Val) Expr { return b.fac.NewLiteral(b.id(), v) }

// Literal is a literal of any CEL value type.
func (b *Builder) Literal(v ref.Val) Expr { return b.literal(v) }

// MapLiteral is a map literal of keys and values, alternating.
func (b *Builder) MapLiteral(kv ...Expr) Expr {
	var entries []ast.EntryExpr
	for i := 0; i+1 < len(kv); i += 2 {
		entries = append(entries, b.fac.NewMapEntry(b.id(), kv[i], kv[i+1], false))
	}
	return b.fac.NewMap(b.id(), entries)
}

// List is a list literal.
func (b *Builder) List(elems ...Expr) Expr { return b.fac.NewList(b.id(), elems, nil) }

var identifier = regexp.MustCompile(`^[A-Za-z_][0-9A-Za-z_]*$`)

// reserved are CEL's reserved words, which cannot be selected as fields.
var reserved = map[string]bool{"in": true, "as": true, "break": true, "const": true, "continue": true, "else": true, "for": true,
	"function": true, "if": true, "import": true, "let": true, "loop": true, "package": true, "namespace": true, "return": true,
	"var": true, "void": true, "while": true, "true": true, "false": true, "null": true}

// Selectable says whether a key can be written as a field selection
// (object.spec); any other key is written as an index (labels["app.kubernetes.io/name"]).
func Selectable(key string) bool { return identifier.MatchString(key) && !reserved[key] }

// Select is e.field, or e["field"] when field is not an identifier.
func (b *Builder) Select(e Expr, field string) Expr {
	if !Selectable(field) {
		return b.Index(e, b.String(field))
	}
	return b.fac.NewSelect(b.id(), e, field)
}

// Field is e.field whatever the field's name (request.namespace: CEL
// parses a reserved word as a selected field; a declared type, such as
// the admission request, has no index).
func (b *Builder) Field(e Expr, field string) Expr { return b.fac.NewSelect(b.id(), e, field) }

// Has is has(e.field), or "field" in e when field is not an identifier.
func (b *Builder) Has(e Expr, field string) Expr {
	if !Selectable(field) {
		return b.In(b.String(field), e)
	}
	return b.fac.NewPresenceTest(b.id(), e, field)
}

// OptionalSelect is e.?field (optional field selection), or e[?"field"]
// when field is not an identifier.
func (b *Builder) OptionalSelect(e Expr, field string) Expr {
	if !Selectable(field) {
		return b.Call(operators.OptIndex, e, b.String(field))
	}
	return b.Call(operators.OptSelect, e, b.String(field))
}

// OrValue is e.orValue(v), of an optional e.
func (b *Builder) OrValue(e, v Expr) Expr { return b.Member("orValue", e, v) }

// Index is e[key].
func (b *Builder) Index(e, key Expr) Expr { return b.Call(operators.Index, e, key) }

// Call is a global function call.
func (b *Builder) Call(fn string, args ...Expr) Expr { return b.fac.NewCall(b.id(), fn, args...) }

// Member is a receiver-style call: target.fn(args).
func (b *Builder) Member(fn string, target Expr, args ...Expr) Expr {
	return b.fac.NewMemberCall(b.id(), fn, target, args...)
}

// In is x in list (or key in map).
func (b *Builder) In(x, container Expr) Expr { return b.fold(b.Call(operators.In, x, container)) }

// Size is e.size().
func (b *Builder) Size(e Expr) Expr { return b.Member("size", e) }

// Add is x + y.
func (b *Builder) Add(x, y Expr) Expr {
	if xs, ok := StringLit(x); ok {
		if ys, ok := StringLit(y); ok {
			return b.String(xs + ys)
		}
		// "a" + ("b" + z) is "ab" + z.
		if y.Kind() == ast.CallKind && y.AsCall().FunctionName() == operators.Add {
			if ys, ok := StringLit(y.AsCall().Args()[0]); ok {
				return b.Add(b.String(xs+ys), y.AsCall().Args()[1])
			}
		}
	}
	// (z + "a") + "b" is z + "ab".
	if ys, ok := StringLit(y); ok && x.Kind() == ast.CallKind && x.AsCall().FunctionName() == operators.Add {
		if xs, ok := StringLit(x.AsCall().Args()[1]); ok {
			return b.Add(x.AsCall().Args()[0], b.String(xs+ys))
		}
	}
	return b.Call(operators.Add, x, y)
}

// StringLit is the value of a string literal.
func StringLit(e Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// IdentName is the name e reads, when e is an identifier.
func IdentName(e Expr) (string, bool) {
	if e.Kind() != ast.IdentKind {
		return "", false
	}
	return e.AsIdent(), true
}

// Eq is x == y.
func (b *Builder) Eq(x, y Expr) Expr {
	if v, ok := sameLiterals(x, y); ok {
		return b.Bool(v)
	}
	if e, ok := b.existsOfSize(operators.Equals, x, y); ok {
		return e
	}
	if e, ok := b.pushDown(x, y, b.Eq); ok {
		return e
	}
	return b.Call(operators.Equals, x, y)
}

// pushDown is (c ? t : f) op y for a literal y, when t or f is a literal:
// c ? t op y : f op y, which folds (has(x.f) ? string(x.f) : "null") ==
// "false" into has(x.f) && string(x.f) == "false").
func (b *Builder) pushDown(x, y Expr, op func(x, y Expr) Expr) (Expr, bool) {
	if x.Kind() == ast.LiteralKind {
		x, y = y, x
	}
	if y.Kind() != ast.LiteralKind {
		return nil, false
	}
	c, t, f, ok := b.AsTernary(x)
	if !ok || t.Kind() != ast.LiteralKind && f.Kind() != ast.LiteralKind {
		return nil, false
	}
	return b.Cond(c, op(t, y), op(f, y)), true
}

// sameLiterals compares two scalar literals of one type.
func sameLiterals(x, y Expr) (bool, bool) {
	if x.Kind() != ast.LiteralKind || y.Kind() != ast.LiteralKind {
		return false, false
	}
	a, c := x.AsLiteral(), y.AsLiteral()
	if a.Type() != c.Type() {
		return false, false
	}
	switch a.(type) {
	case types.String, types.Int, types.Bool:
		return a.Equal(c) == types.True, true
	}
	return false, false
}

// Ne is x != y.
func (b *Builder) Ne(x, y Expr) Expr {
	if v, ok := sameLiterals(x, y); ok {
		return b.Bool(!v)
	}
	if e, ok := b.existsOfSize(operators.NotEquals, x, y); ok {
		return e
	}
	if e, ok := b.pushDown(x, y, b.Ne); ok {
		return e
	}
	return b.Call(operators.NotEquals, x, y)
}

// Compare is x op y for op one of == != < <= > >=.
func (b *Builder) Compare(op string, x, y Expr) Expr {
	fn, ok := comparisons[op]
	if !ok {
		panic(fmt.Sprintf("celbuild: comparison %q", op))
	}
	return b.compareCall(fn, x, y)
}

// comparisonFunction are the ordering comparisons.
var comparisonFunction = map[string]bool{operators.Less: true, operators.LessEquals: true, operators.Greater: true, operators.GreaterEquals: true}

// compareCall is the comparison fn of x and y, folded; the size of a
// filter compared with 0 or 1 is whether an element passes it
// (l.filter(v, p).size() > 0 is l.exists(v, p)).
func (b *Builder) compareCall(fn string, x, y Expr) Expr {
	switch fn {
	case operators.Equals:
		return b.fold(b.Eq(x, y))
	case operators.NotEquals:
		return b.fold(b.Ne(x, y))
	}
	if e, ok := b.existsOfSize(fn, x, y); ok {
		return e
	}
	return b.fold(b.Call(fn, x, y))
}

// existsOfSize is size(l.filter(v, p)) op n as l.exists(v, p) or its
// negation, for the comparisons with 0 and 1 that test emptiness.
func (b *Builder) existsOfSize(fn string, x, y Expr) (Expr, bool) {
	n, ok := intLit(y)
	if !ok {
		return nil, false
	}
	var nonEmpty bool
	switch {
	case fn == operators.Greater && n == 0, fn == operators.GreaterEquals && n == 1, fn == operators.NotEquals && n == 0:
		nonEmpty = true
	case fn == operators.Equals && n == 0, fn == operators.LessEquals && n == 0, fn == operators.Less && n == 1:
	default:
		return nil, false
	}
	if cs, ok := b.counted(x); ok {
		// (c1 ? 1 : 0) + (c2 ? 1 : 0) > 0 is c1 || c2.
		if nonEmpty {
			return b.Or(cs...), true
		}
		return b.Not(b.Or(cs...)), true
	}
	if x.Kind() != ast.CallKind || x.AsCall().FunctionName() != "size" {
		return nil, false
	}
	c := x.AsCall()
	var l Expr
	switch {
	case c.IsMemberFunction() && len(c.Args()) == 0:
		l = c.Target()
	case !c.IsMemberFunction() && len(c.Args()) == 1:
		l = c.Args()[0]
	default:
		return nil, false
	}
	call, ok := b.info.GetMacroCall(l.ID())
	if !ok || !b.total[l.ID()] || l.Kind() != ast.ComprehensionKind || call.AsCall().FunctionName() != "filter" || len(call.AsCall().Args()) != 2 {
		return nil, false
	}
	m := call.AsCall()
	v := m.Args()[0]
	if v.Kind() != ast.IdentKind {
		return nil, false
	}
	exists := b.Exists(m.Target(), v.AsIdent(), m.Args()[1])
	if nonEmpty {
		return exists, true
	}
	return b.Not(exists), true
}

// Count is the number of the conditions cs that hold: (c1 ? 1 : 0) +
// (c2 ? 1 : 0) ..., which compared with 0 or 1 is written as whether
// one holds (existsOfSize).
func (b *Builder) Count(cs ...Expr) Expr {
	out := b.Int(0)
	for i, c := range cs {
		t := b.fac.NewCall(b.id(), operators.Conditional, c, b.Int(1), b.Int(0))
		if i == 0 {
			out = t
			continue
		}
		out = b.fac.NewCall(b.id(), operators.Add, out, t)
	}
	return out
}

// counted are the conditions of a Count.
func (b *Builder) counted(x Expr) ([]Expr, bool) {
	if c, t, f, ok := b.AsTernary(x); ok {
		one, okOne := intLit(t)
		zero, okZero := intLit(f)
		if okOne && okZero && one == 1 && zero == 0 {
			return []Expr{c}, true
		}
		return nil, false
	}
	if x.Kind() != ast.CallKind || x.AsCall().FunctionName() != operators.Add || len(x.AsCall().Args()) != 2 {
		return nil, false
	}
	l, okL := b.counted(x.AsCall().Args()[0])
	r, okR := b.counted(x.AsCall().Args()[1])
	if !okL || !okR {
		return nil, false
	}
	return append(l, r...), true
}

func intLit(e Expr) (int64, bool) {
	if e.Kind() != ast.LiteralKind {
		return 0, false
	}
	n, ok := e.AsLiteral().(types.Int)
	return int64(n), ok
}

var comparisons = map[string]string{"==": operators.Equals, "!=": operators.NotEquals, "<": operators.Less,
	"<=": operators.LessEquals, ">": operators.Greater, ">=": operators.GreaterEquals}

// opposites are the comparisons a negation turns into.
var opposites = map[string]string{operators.Equals: operators.NotEquals, operators.NotEquals: operators.Equals}

// Bool values of literal expressions.

// IsTrue says whether e is the literal true.
func IsTrue(e Expr) bool { return isBool(e, true) }

// IsFalse says whether e is the literal false.
func IsFalse(e Expr) bool { return isBool(e, false) }

func isBool(e Expr, v bool) bool {
	if e == nil || e.Kind() != ast.LiteralKind {
		return false
	}
	bv, ok := e.AsLiteral().(types.Bool)
	return ok && bool(bv) == v
}

// And is the conjunction of xs: true operands are left out, a false one
// makes it false, nested conjunctions are flattened; no operand is true.
func (b *Builder) And(xs ...Expr) Expr { return b.logical(operators.LogicalAnd, true, xs) }

// Or is the disjunction of xs, folded as And is.
func (b *Builder) Or(xs ...Expr) Expr { return b.logical(operators.LogicalOr, false, xs) }

// holdsPresence says the operands xs of op (or of op calls among them)
// include the presence test p.
func (b *Builder) holdsPresence(xs []Expr, op string, p Expr) bool {
	for _, x := range xs {
		switch {
		case isPresenceTest(x) && b.Same(x, p):
			return true
		case x.Kind() == ast.CallKind && x.AsCall().FunctionName() == op && b.holdsPresence(x.AsCall().Args(), op, p):
			return true
		}
	}
	return false
}

// assumePresent is x, an operand of && after the operands kept, with each
// presence test that one of kept is taken as true in x's own &&, || and
// ! (has(v.a) && !(has(v.a) && has(v.a.b)) is has(v.a) && !has(v.a.b)):
// x decides the result only where kept held. x is not rewritten inside comprehensions, which may bind its names.
// Only with AssumeTypedPresence: where has(x.f) may fail, a && whose
// first operand fails can be false or an error depending on x.
func (b *Builder) assumePresent(op string, kept []Expr, x Expr) Expr {
	if !b.typedPresence || op != operators.LogicalAnd || x.Kind() != ast.CallKind {
		return x
	}
	var facts []Expr
	for _, k := range kept {
		for _, c := range Conjuncts(k) {
			if isPresenceTest(c) {
				facts = append(facts, c)
			}
		}
	}
	if len(facts) == 0 {
		return x
	}
	var rewrite func(e Expr) (Expr, bool)
	rewrite = func(e Expr) (Expr, bool) {
		switch {
		case isPresenceTest(e):
			for _, f := range facts {
				if b.Same(e, f) {
					return b.Bool(true), true
				}
			}
			return e, false
		case e.Kind() != ast.CallKind:
			return e, false
		}
		c := e.AsCall()
		switch c.FunctionName() {
		case operators.LogicalAnd, operators.LogicalOr, operators.LogicalNot:
		default:
			return e, false
		}
		args := make([]Expr, len(c.Args()))
		changed := false
		for i, a := range c.Args() {
			var ch bool
			args[i], ch = rewrite(a)
			changed = changed || ch
		}
		if !changed {
			return e, false
		}
		switch c.FunctionName() {
		case operators.LogicalAnd:
			return b.And(args...), true
		case operators.LogicalOr:
			return b.Or(args...), true
		}
		return b.Not(args[0]), true
	}
	out, _ := rewrite(x)
	return out
}

// Conjuncts are the operands of e's chain of &&, in order (e itself when
// it is not one).
func Conjuncts(e Expr) []Expr { return operands(operators.LogicalAnd, e) }

// isPresenceTest says e is has(x.f).
func isPresenceTest(e Expr) bool {
	return e.Kind() == ast.SelectKind && e.AsSelect().IsTestOnly()
}

func (b *Builder) logical(op string, unit bool, xs []Expr) Expr {
	var kept []Expr
	for _, x := range xs {
		switch {
		case x == nil || isBool(x, unit):
			continue
		case isBool(x, !unit):
			return b.Bool(!unit)
		case x.Kind() == ast.CallKind && x.AsCall().FunctionName() == op:
			// One level: a chain's left operand stays as it is.
			for _, a := range x.AsCall().Args() {
				if isPresenceTest(a) && b.holdsPresence(kept, op, a) {
					continue
				}
				kept = append(kept, b.assumePresent(op, kept, a))
			}
		case isPresenceTest(x) && b.holdsPresence(kept, op, x):
			// has(a.f) && has(a.f) is has(a.f) (only presence tests
			// are compared: they are small to print).
		default:
			kept = append(kept, b.assumePresent(op, kept, x))
		}
	}
	kept = b.membership(op, kept)
	kept = b.quantifiers(op, kept)
	switch len(kept) {
	case 0:
		return b.Bool(unit)
	case 1:
		return kept[0]
	}
	out := kept[0]
	for _, x := range kept[1:] {
		out = b.Call(op, out, x)
	}
	return out
}

// quantifiers writes the quantifiers over one list among the operands xs
// of op as one, where the first of them was: l.exists(c, a) ||
// l.exists(c, b) is l.exists(c, a || b), and l.all(c, a) && l.all(c, b)
// is l.all(c, a && b). Both are true (for &&, false) where one element
// makes one predicate so, whatever the errors of the others, and an error
// otherwise where one errs.
func (b *Builder) quantifiers(op string, xs []Expr) []Expr {
	var flat []Expr
	for _, x := range xs {
		flat = append(flat, operands(op, x)...)
	}
	if merged := b.mergeQuantifiers(op, flat); len(merged) < len(flat) {
		return merged
	}
	return xs
}

// mergeQuantifiers is quantifiers over the operands xs of a flat chain.
func (b *Builder) mergeQuantifiers(op string, xs []Expr) []Expr {
	// split is a quantifier kept, at index k of out, and its parts.
	type split struct {
		k            int
		target, pred Expr
		v            string
	}
	var out []Expr
	var kept []split
	for _, x := range xs {
		target, v, pred, ok := b.quantifier(op, x)
		if !ok {
			out = append(out, x)
			continue
		}
		i := slices.IndexFunc(kept, func(s split) bool { return s.v == v && b.Same(s.target, target) })
		if i < 0 {
			kept = append(kept, split{k: len(out), target: target, pred: pred, v: v})
			out = append(out, x)
			continue
		}
		m := &kept[i]
		if op == operators.LogicalOr {
			m.pred = b.Or(m.pred, pred)
			out[m.k] = b.Exists(m.target, v, m.pred)
		} else {
			m.pred = b.And(m.pred, pred)
			out[m.k] = b.All(m.target, v, m.pred)
		}
	}
	return out
}

// quantifier splits e, target.exists(v, pred) for op || (target.all(v,
// pred) for &&), as the macro expands it.
func (b *Builder) quantifier(op string, e Expr) (target Expr, v string, pred Expr, ok bool) {
	if e.Kind() != ast.ComprehensionKind {
		return nil, "", nil, false
	}
	c := e.AsComprehension()
	step, result := c.LoopStep(), c.Result()
	if c.HasIterVar2() || result.Kind() != ast.IdentKind || result.AsIdent() != c.AccuVar() ||
		step.Kind() != ast.CallKind || step.AsCall().FunctionName() != op {
		return nil, "", nil, false
	}
	init := c.AccuInit()
	if !isBool(init, op == operators.LogicalAnd) {
		return nil, "", nil, false
	}
	// The step is accu op pred; adopted, a pred that is itself a chain of
	// op is written as one chain with accu (accu || a || b).
	ops := operands(op, step)
	if ops[0].Kind() != ast.IdentKind || ops[0].AsIdent() != c.AccuVar() {
		return nil, "", nil, false
	}
	pred = ops[1]
	for _, x := range ops[2:] {
		pred = b.Call(op, pred, x)
	}
	return c.IterRange(), c.IterVar(), pred, true
}

// membership writes the comparisons of one value with string literals
// among the operands xs of op as one test of membership, where the first
// of them was: x == "a" || x == "b" is x in ["a", "b"], and x != "a" &&
// x != "b" is !(x in ["a", "b"]). CEL's || and && commute (an error or an
// unknown is absorbed whatever the order), and x == "a" is false, as
// "a" in [x] is, when x is not a string.
func (b *Builder) membership(op string, xs []Expr) []Expr {
	cmp := operators.Equals
	if op == operators.LogicalAnd {
		cmp = operators.NotEquals
	}
	// operand is x and its literals when e is x cmp "lit" or, for ||,
	// x in ["lit", ...] (for &&, !(x in [...])).
	operand := func(e Expr) (Expr, []Expr, bool) {
		if cmp == operators.NotEquals && e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalNot {
			e = e.AsCall().Args()[0]
			if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.In {
				return nil, nil, false
			}
		} else if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != cmp && !(cmp == operators.Equals && e.AsCall().FunctionName() == operators.In) {
			return nil, nil, false
		}
		args := e.AsCall().Args()
		x, y := args[0], args[1]
		if e.AsCall().FunctionName() == operators.In {
			if y.Kind() != ast.ListKind || len(y.AsList().OptionalIndices()) > 0 {
				return nil, nil, false
			}
			for _, l := range y.AsList().Elements() {
				if _, ok := StringLit(l); !ok {
					return nil, nil, false
				}
			}
			return x, y.AsList().Elements(), x.Kind() != ast.LiteralKind
		}
		if _, ok := StringLit(x); ok {
			x, y = y, x
		}
		_, ok := StringLit(y)
		return x, []Expr{y}, ok && x.Kind() != ast.LiteralKind
	}
	type group struct {
		x    Expr
		lits []Expr
		at   int
	}
	var groups []*group
	var out []Expr
	for _, e := range xs {
		x, lits, ok := operand(e)
		if !ok {
			out = append(out, e)
			continue
		}
		var g *group
		for _, h := range groups {
			if b.Same(h.x, x) {
				g = h
			}
		}
		if g == nil {
			g = &group{x: x, at: len(out)}
			groups = append(groups, g)
			out = append(out, e)
		}
		for _, l := range lits {
			lv, _ := StringLit(l)
			if !slices.ContainsFunc(g.lits, func(m Expr) bool { mv, _ := StringLit(m); return mv == lv }) {
				g.lits = append(g.lits, l)
			}
		}
	}
	for _, g := range groups {
		if len(g.lits) < 2 {
			continue
		}
		in := b.Call(operators.In, g.x, b.List(g.lits...))
		if cmp == operators.NotEquals {
			in = b.Call(operators.LogicalNot, in)
		}
		out[g.at] = in
	}
	return out
}

// Not is !x: a literal is folded, !!x is x, a negated == or != is the
// other comparison, and a negated && or || whose operands are mostly
// negations or comparisons is De Morgan's (!(!a || b) is a && !b).
func (b *Builder) Not(x Expr) Expr {
	switch {
	case IsTrue(x):
		return b.Bool(false)
	case IsFalse(x):
		return b.Bool(true)
	case x.Kind() == ast.CallKind:
		c := x.AsCall()
		switch fn := c.FunctionName(); {
		case fn == operators.LogicalNot:
			return c.Args()[0]
		case opposites[fn] != "":
			return b.Call(opposites[fn], c.Args()...)
		case (fn == operators.LogicalAnd || fn == operators.LogicalOr) && 2*negatable(c.Args()) >= len(c.Args()):
			args := make([]Expr, len(c.Args()))
			for i, a := range c.Args() {
				args[i] = b.Not(a)
			}
			if fn == operators.LogicalAnd {
				return b.Or(args...)
			}
			return b.And(args...)
		}
	}
	return b.Call(operators.LogicalNot, x)
}

// negatable counts the expressions that are no longer negated: negations,
// == and !=.
func negatable(xs []Expr) int {
	n := 0
	for _, x := range xs {
		if x.Kind() != ast.CallKind {
			continue
		}
		fn := x.AsCall().FunctionName()
		if fn == operators.LogicalNot || opposites[fn] != "" {
			n++
		}
	}
	return n
}

// Cond is c ? t : f, folded when c is a literal or t and f are.
func (b *Builder) Cond(c, t, f Expr) Expr {
	if tc, tt, _, ok := b.AsTernary(t); ok && b.Same(tc, c) {
		t = tt
	}
	if fc, _, ff, ok := b.AsTernary(f); ok && b.Same(fc, c) {
		f = ff
	}
	switch {
	case IsTrue(c):
		return t
	case IsFalse(c):
		return f
	case IsTrue(t) && IsFalse(f):
		return c
	case IsFalse(t) && IsTrue(f):
		return b.Not(c)
	case IsTrue(t):
		return b.Or(c, f)
	case IsFalse(f):
		return b.And(c, t)
	case IsFalse(t):
		return b.And(b.Not(c), f)
	case IsTrue(f):
		return b.Or(b.Not(c), t)
	}
	return b.Call(operators.Conditional, c, t, f)
}

// Ternary is c ? t : f for values that are not booleans (strings,
// lists), folded when c is a literal or both branches are the same; a
// branch that tests c again takes c's answer (c ? (c ? a : b) : d is
// c ? a : d).
func (b *Builder) Ternary(c, t, f Expr) Expr {
	switch {
	case IsTrue(c):
		return t
	case IsFalse(c):
		return f
	}
	if tc, tt, _, ok := b.AsTernary(t); ok && b.Same(tc, c) {
		t = tt
	}
	if fc, _, ff, ok := b.AsTernary(f); ok && b.Same(fc, c) {
		f = ff
	}
	switch {
	case b.Same(t, f):
		return t
	case IsTrue(t) && IsFalse(f):
		return c
	case IsFalse(t) && IsTrue(f):
		return b.Not(c)
	}
	if v, ok := b.presentOr(c, t, f); ok {
		return v
	}
	if v, ok := b.sharedPrefix(c, t, f); ok {
		return v
	}
	return b.Call(operators.Conditional, c, t, f)
}

// sharedPrefix writes c ? p + x : p + y, for strings, as p + (c ? x : y):
// the operands the two concatenations start with, and the text two
// literals then start with up to a path's last shared /, are written
// once (a failure path's "/spec/containers/" + string(i) + "/"). p is evaluated in either
// branch, so the value and the errors are the same.
func (b *Builder) sharedPrefix(c, t, f Expr) (Expr, bool) {
	ts, fs := operands(operators.Add, t), operands(operators.Add, f)
	n := 0
	for n < len(ts) && n < len(fs) && b.Same(ts[n], fs[n]) {
		n++
	}
	var text string
	if n < len(ts) && n < len(fs) {
		tl, tok := StringLit(ts[n])
		fl, fok := StringLit(fs[n])
		for tok && fok && len(text) < len(tl) && len(text) < len(fl) && tl[len(text)] == fl[len(text)] {
			text += tl[len(text) : len(text)+1]
		}
		// Split after a path's /, not inside a step or a sentence.
		text = text[:strings.LastIndex(text, "/")+1]
	}
	if n == 0 && text == "" {
		return nil, false
	}
	// Only strings: a string literal among the operands written once.
	isString := text != ""
	for _, x := range ts[:n] {
		if _, ok := StringLit(x); ok {
			isString = true
		}
	}
	if !isString {
		return nil, false
	}
	// sum is the concatenation of xs, "" for none.
	sum := func(xs []Expr) Expr {
		out := b.String("")
		for i, x := range xs {
			if i == 0 {
				out = x
				continue
			}
			out = b.Add(out, x)
		}
		return out
	}
	rest := func(xs []Expr) Expr {
		xs = xs[n:]
		if text != "" {
			lit, _ := StringLit(xs[0])
			xs = xs[1:]
			if lit != text || len(xs) == 0 {
				xs = append([]Expr{b.String(lit[len(text):])}, xs...)
			}
		}
		return sum(xs)
	}
	start := slices.Clone(ts[:n])
	if text != "" {
		start = append(start, b.String(text))
	}
	return b.Add(sum(start), b.Ternary(c, rest(ts), rest(fs))), true
}

// presentOr is has(x.f) ? x.f : d, written x.?f.orValue(d) for a literal
// d ("k" in m ? m["k"] : d too).
func (b *Builder) presentOr(c, t, f Expr) (Expr, bool) {
	if f.Kind() != ast.LiteralKind || f.AsLiteral() == types.NullValue {
		return nil, false
	}
	var operand Expr
	var field string
	switch {
	case c.Kind() == ast.SelectKind && c.AsSelect().IsTestOnly():
		operand, field = c.AsSelect().Operand(), c.AsSelect().FieldName()
	case c.Kind() == ast.CallKind && c.AsCall().FunctionName() == operators.In && c.AsCall().Args()[0].Kind() == ast.LiteralKind:
		k, ok := c.AsCall().Args()[0].AsLiteral().(types.String)
		if !ok {
			return nil, false
		}
		operand, field = c.AsCall().Args()[1], string(k)
	default:
		return nil, false
	}
	if !b.Same(t, b.Select(operand, field)) {
		return nil, false
	}
	return b.OrValue(b.OptionalSelect(operand, field), f), true
}

// AsTernary splits c ? t : f.
func (b *Builder) AsTernary(e Expr) (c, t, f Expr, ok bool) {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Conditional {
		return nil, nil, nil, false
	}
	a := e.AsCall().Args()
	return a[0], a[1], a[2], true
}

// Same says whether x and y are the same expression (they print alike).
func (b *Builder) Same(x, y Expr) bool {
	px, errx := b.Print(x)
	py, erry := b.Print(y)
	return errx == nil && erry == nil && px == py
}

// Parse adopts CEL source into the builder, as if it had been built: the
// parsed expression gets the builder's IDs and its macros are recorded.
func (b *Builder) Parse(src string) (Expr, error) {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true), parser.PopulateMacroCalls(true))
	if err != nil {
		return nil, err
	}
	parsed, iss := p.Parse(common.NewTextSource(src))
	if len(iss.GetErrors()) > 0 {
		return nil, fmt.Errorf("%s", iss.ToDisplayString())
	}
	a := &adoption{b: b, info: parsed.SourceInfo(), ids: map[int64]int64{}}
	return a.adopt(parsed.Expr()), nil
}

// macroCall copies a macro's call: the target with a, the arguments with
// inner.
func (a *adoption) macroCall(call Expr, inner *adoption) Expr {
	if call.Kind() != ast.CallKind {
		return a.adopt(call)
	}
	c := call.AsCall()
	args := make([]Expr, len(c.Args()))
	for i, arg := range c.Args() {
		args[i] = inner.adopt(arg)
	}
	if c.IsMemberFunction() {
		return a.b.fac.NewMemberCall(0, c.FunctionName(), a.adopt(c.Target()), args...)
	}
	return a.b.fac.NewCall(0, c.FunctionName(), args...)
}

// Substitute is e with every free identifier name replaced by with.
func (b *Builder) Substitute(e Expr, name string, with Expr) Expr {
	a := &adoption{b: b, info: b.info, ids: map[int64]int64{}, name: name, with: with}
	return a.adopt(e)
}

// SubstituteField is e with every read of field of the free identifier
// name (variables.resource) replaced by with.
func (b *Builder) SubstituteField(e Expr, name, field string, with Expr) Expr {
	a := &adoption{b: b, info: b.info, ids: map[int64]int64{}, name: name, field: field, with: with}
	return a.adopt(e)
}

// presenceChains is e with each run of nested presence tests written as
// one optional chain: has(x.a) && has(x.a.b) is x.?a.?b.hasValue(), and
// !has(x.a) || !has(x.a.b) is !x.?a.?b.hasValue(). Only with
// AssumeTypedPresence, where x.a is an object (elsewhere the two fail on
// different values); applied when printing, so that the presence tests
// the other simplifications look for stay presence tests until then.
func (b *Builder) presenceChains(e Expr) Expr {
	a := &adoption{b: b, info: b.info, ids: map[int64]int64{}, chains: true}
	return a.adopt(e)
}

// rechain is e, a chain of op, with its runs of presence tests chained.
func (b *Builder) rechain(op string, e Expr) Expr {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != op {
		return e
	}
	xs := operands(op, e)
	ys := b.chained(op, xs)
	if len(ys) == len(xs) {
		return e
	}
	out := ys[0]
	for _, y := range ys[1:] {
		out = b.fac.NewCall(b.id(), op, out, y)
	}
	return out
}

// selectAll is e.f1.f2... for the fields.
func (b *Builder) selectAll(e Expr, fields []string) Expr {
	for _, f := range fields {
		e = b.Select(e, f)
	}
	return e
}

// operands are the operands of e's chain of op, in order.
func operands(op string, e Expr) []Expr {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != op {
		return []Expr{e}
	}
	var out []Expr
	for _, a := range e.AsCall().Args() {
		out = append(out, operands(op, a)...)
	}
	return out
}

// chained rewrites the runs of nested presence tests among the operands
// xs of && (or, negated, of ||): each is has(x.f), or a chain already
// written, x.?f.?g.hasValue().
func (b *Builder) chained(op string, xs []Expr) []Expr {
	test := func(x Expr) (Expr, []string, bool) {
		if op == operators.LogicalOr {
			if x.Kind() != ast.CallKind || x.AsCall().FunctionName() != operators.LogicalNot {
				return nil, nil, false
			}
			x = x.AsCall().Args()[0]
		}
		return presenceParts(x)
	}
	var out []Expr
	for i := 0; i < len(xs); {
		base, fields, ok := test(xs[i])
		j := i + 1
		// A run: each next test is on the field the run reached.
		for at := b.selectAll(base, fields); ok && j < len(xs); j++ {
			next, more, chains := test(xs[j])
			if !chains || !b.Same(next, at) {
				break
			}
			fields = append(fields, more...)
			at = b.selectAll(at, more)
		}
		if j == i+1 {
			out = append(out, xs[i])
			i++
			continue
		}
		chain := base
		for _, f := range fields {
			chain = b.OptionalSelect(chain, f)
		}
		has := b.Member("hasValue", chain)
		if op == operators.LogicalOr {
			has = b.fac.NewCall(b.id(), operators.LogicalNot, has)
		}
		out = append(out, has)
		i = j
	}
	return out
}

// presenceParts splits has(x.f) into x and [f], and x.?f.?g.hasValue()
// into x and [f, g].
func presenceParts(e Expr) (Expr, []string, bool) {
	if isPresenceTest(e) {
		return e.AsSelect().Operand(), []string{e.AsSelect().FieldName()}, true
	}
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != "hasValue" || !e.AsCall().IsMemberFunction() {
		return nil, nil, false
	}
	var fields []string
	x := e.AsCall().Target()
	for x.Kind() == ast.CallKind && x.AsCall().FunctionName() == operators.OptSelect {
		f, ok := StringLit(x.AsCall().Args()[1])
		if !ok {
			return nil, nil, false
		}
		fields = append([]string{f}, fields...)
		x = x.AsCall().Args()[0]
	}
	if len(fields) == 0 {
		return nil, nil, false
	}
	return x, fields, true
}

// Uses counts the free identifiers name in e.
func (b *Builder) Uses(e Expr, name string) int {
	n := 0
	a := &adoption{b: b, info: b.info, ids: map[int64]int64{}, name: name, with: nil, count: &n}
	a.adopt(e)
	return n
}

// adoption copies expressions made by another source with the builder's
// IDs: ids maps the old IDs to the new, for the macro calls that refer to
// a nested macro by its ID.
type adoption struct {
	b    *Builder
	info *ast.SourceInfo
	ids  map[int64]int64
	// name, when set, is an identifier replaced by with (Substitute), or
	// counted into count (Uses); a comprehension binding it again hides
	// it.
	name  string
	with  Expr
	count *int
	// field, when set, makes the name's field replaced instead
	// (SubstituteField): name.field, not name.
	field string
	// muted stops counting (a macro's call, counted in its expansion).
	muted bool
	// chains writes runs of nested presence tests as optional chains
	// (presenceChains).
	chains bool
	// memo is what each node already copied became, by its ID.
	memo map[int64]adopted
}

func (a *adoption) adopt(e Expr) Expr {
	if m, ok := a.memo[e.ID()]; ok && e.ID() != 0 {
		// A node met again (a macro's body is in its expansion and in its
		// call): copied once, or adoption doubles with every nested macro.
		if a.count != nil && !a.muted {
			*a.count += m.uses
		}
		return m.out
	}
	before := 0
	if a.count != nil {
		before = *a.count
	}
	out := a.copy(e)
	a.ids[e.ID()] = out.ID()
	if e.ID() != 0 {
		if a.memo == nil {
			a.memo = map[int64]adopted{}
		}
		m := adopted{out: out}
		if a.count != nil {
			m.uses = *a.count - before
		}
		// Met first in a macro's call (muted), its uses are not known.
		if !a.muted {
			a.memo[e.ID()] = m
		}
	}
	return out
}

// adopted is a node's copy, with the free uses of the name counted in it.
type adopted struct {
	out  Expr
	uses int
}

func (a *adoption) copy(e Expr) Expr {
	b, info := a.b, a.info
	var out Expr
	switch e.Kind() {
	case ast.IdentKind:
		switch {
		case a.name == "" || e.AsIdent() != a.name || a.field != "":
			out = b.Ident(e.AsIdent())
		case a.count != nil:
			if !a.muted {
				*a.count++
			}
			out = b.Ident(e.AsIdent())
		default:
			out = a.with
		}
	case ast.LiteralKind:
		out = b.literal(e.AsLiteral())
	case ast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			out = b.fac.NewPresenceTest(b.id(), a.adopt(s.Operand()), s.FieldName())
			if call, ok := info.GetMacroCall(e.ID()); ok {
				// has(x.f): a macro that a nested macro's call refers to
				// by its ID.
				muted := a.muted
				a.muted = true
				b.info.SetMacroCall(out.ID(), a.macroCall(call, a))
				a.muted = muted
			}
		} else if op := s.Operand(); a.field != "" && s.FieldName() == a.field && op.Kind() == ast.IdentKind && op.AsIdent() == a.name {
			out = a.with
		} else {
			out = b.fac.NewSelect(b.id(), a.adopt(s.Operand()), s.FieldName())
		}
	case ast.CallKind:
		c := e.AsCall()
		args := make([]Expr, len(c.Args()))
		for i, arg := range c.Args() {
			args[i] = a.adopt(arg)
		}
		switch fn := c.FunctionName(); {
		case c.IsMemberFunction():
			out = b.fold(b.Member(fn, a.adopt(c.Target()), args...))
		case fn == operators.Equals && len(args) == 2:
			out = b.fold(b.Eq(args[0], args[1]))
		case fn == operators.NotEquals && len(args) == 2:
			out = b.fold(b.Ne(args[0], args[1]))
		case comparisonFunction[fn] && len(args) == 2:
			out = b.compareCall(fn, args[0], args[1])
		case fn == operators.LogicalNot && len(args) == 1:
			out = b.Not(args[0])
		case fn == operators.LogicalAnd || fn == operators.LogicalOr:
			if fn == operators.LogicalAnd {
				out = b.And(args...)
			} else {
				out = b.Or(args...)
			}
			if a.chains {
				out = b.rechain(fn, out)
			}
		case fn == operators.Conditional && len(args) == 3:
			out = b.Ternary(args[0], args[1], args[2])
		default:
			out = b.fold(b.Call(fn, args...))
		}
	case ast.ListKind:
		l := e.AsList()
		elems := make([]Expr, len(l.Elements()))
		for i, el := range l.Elements() {
			elems[i] = a.adopt(el)
		}
		out = b.fac.NewList(b.id(), elems, l.OptionalIndices())
	case ast.MapKind:
		var entries []ast.EntryExpr
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			entries = append(entries, b.fac.NewMapEntry(b.id(), a.adopt(me.Key()), a.adopt(me.Value()), me.IsOptional()))
		}
		out = b.fac.NewMap(b.id(), entries)
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		rng := a.adopt(c.IterRange())
		shadowed := a.name != "" && (c.IterVar() == a.name || c.IterVar2() == a.name || c.AccuVar() == a.name)
		inner := a
		if shadowed {
			inner = &adoption{b: b, info: info, ids: a.ids}
		}
		out = b.fac.NewComprehensionTwoVar(b.id(), rng, c.IterVar(), c.IterVar2(), c.AccuVar(),
			inner.adopt(c.AccuInit()), inner.adopt(c.LoopCondition()), inner.adopt(c.LoopStep()), inner.adopt(c.Result()))
		if b.total[e.ID()] && info == b.info {
			b.total[out.ID()] = true
		}
		if call, ok := info.GetMacroCall(e.ID()); ok {
			// The call that prints the macro: its target (the range) is in
			// the outer scope, its arguments in the comprehension's. Counted
			// once, in the expansion above.
			muted, innerMuted := a.muted, inner.muted
			a.muted, inner.muted = true, true
			mc := a.macroCall(call, inner)
			b.info.SetMacroCall(out.ID(), mc)
			a.muted, inner.muted = muted, innerMuted
			if m := mc.AsCall(); (m.FunctionName() == "exists" || m.FunctionName() == "all") && len(m.Args()) == 2 && m.Args()[0].Kind() == ast.IdentKind {
				if x, ok := oneLiteral(m.Target()); ok {
					// ["ALL"].exists(v, p) is p with "ALL" for v.
					out = b.Substitute(m.Args()[1], m.Args()[0].AsIdent(), x)
				}
			}
		}
	case ast.UnspecifiedExprKind:
		out = b.fac.NewUnspecifiedExpr(a.ids[e.ID()])
	default:
		panic(fmt.Sprintf("celbuild: cannot adopt a %v", e.Kind()))
	}
	return out
}

// All is target.all(v, pred); a literal true predicate is true.
func (b *Builder) All(target Expr, v string, pred Expr) Expr {
	if IsTrue(pred) {
		return pred
	}
	if x, ok := oneLiteral(target); ok {
		return b.Substitute(pred, v, x)
	}
	return b.macro(parser.MakeAll, "all", target, v, pred)
}

// Exists is target.exists(v, pred); a literal false predicate is false.
func (b *Builder) Exists(target Expr, v string, pred Expr) Expr {
	if IsFalse(pred) {
		return pred
	}
	if x, ok := oneLiteral(target); ok {
		return b.Substitute(pred, v, x)
	}
	return b.macro(parser.MakeExists, "exists", target, v, pred)
}

// ExistsIndexed is target.exists(i, v, pred), the two-variable exists of
// Kubernetes 1.32 (cel-go's ext.TwoVarComprehensions): whether the
// element at some index i, of value v, passes pred.
func (b *Builder) ExistsIndexed(target Expr, i, v string, pred Expr) Expr {
	h := &helper{b: b}
	comp := b.fac.NewComprehensionTwoVar(b.id(), target, i, v, h.AccuIdentName(), b.Bool(false),
		b.Call(operators.NotStrictlyFalse, b.Call(operators.LogicalNot, h.NewAccuIdent())),
		b.Call(operators.LogicalOr, h.NewAccuIdent(), pred), h.NewAccuIdent())
	b.info.SetMacroCall(comp.ID(), b.fac.NewMemberCall(0, "exists", target, b.Ident(i), b.Ident(v), pred))
	return comp
}

// oneLiteral is the element of a list literal of one scalar literal:
// ["ALL"].exists(v, p) is p with "ALL" for v.
func oneLiteral(e Expr) (Expr, bool) {
	if e.Kind() != ast.ListKind || len(e.AsList().Elements()) != 1 || len(e.AsList().OptionalIndices()) > 0 {
		return nil, false
	}
	x := e.AsList().Elements()[0]
	return x, x.Kind() == ast.LiteralKind
}

// Map is target.map(v, fn).
func (b *Builder) Map(target Expr, v string, fn Expr) Expr {
	return b.macro(parser.MakeMap, "map", target, v, fn)
}

// Filter is target.filter(v, pred).
func (b *Builder) Filter(target Expr, v string, pred Expr) Expr {
	return b.macro(parser.MakeFilter, "filter", target, v, pred)
}

// TotalFilter is target.filter(v, pred) for a predicate that never
// fails: its size compared with 0 is written as exists() (which, unlike
// filter, absorbs an element's error, so only such a filter is).
func (b *Builder) TotalFilter(target Expr, v string, pred Expr) Expr {
	f := b.Filter(target, v, pred)
	b.total[f.ID()] = true
	return f
}

// macro builds the comprehension of a receiver macro and records the call
// it prints as.
func (b *Builder) macro(expand parser.MacroExpander, name string, target Expr, v string, body Expr) Expr {
	h := &helper{b: b}
	comp, err := expand(h, target, []Expr{b.Ident(v), body})
	if err != nil {
		panic(fmt.Sprintf("celbuild: %s macro: %s", name, err.Message))
	}
	b.info.SetMacroCall(comp.ID(), b.fac.NewMemberCall(0, name, target, b.Ident(v), body))
	return comp
}

// TransformList is target.transformList(i, v, filter, transform) (the
// two-variable comprehensions of Kubernetes 1.32): the transforms of the
// elements whose index i and value v pass filter (nil: every element).
func (b *Builder) TransformList(target Expr, i, v string, filter, transform Expr) Expr {
	h := &helper{b: b}
	step := b.Call(operators.Add, h.NewAccuIdent(), b.List(transform))
	if filter != nil {
		step = b.Call(operators.Conditional, filter, step, h.NewAccuIdent())
	}
	comp := b.fac.NewComprehensionTwoVar(b.id(), target, i, v, h.AccuIdentName(), b.List(), b.Bool(true), step, h.NewAccuIdent())
	args := []Expr{b.Ident(i), b.Ident(v), transform}
	if filter != nil {
		args = []Expr{b.Ident(i), b.Ident(v), filter, transform}
	}
	b.info.SetMacroCall(comp.ID(), b.fac.NewMemberCall(0, "transformList", target, args...))
	return comp
}

// Print renders e as CEL source.
func (b *Builder) Print(e Expr) (string, error) {
	return parser.Unparse(e, b.info, parser.WrapOnColumn(1_000_000))
}

// MustPrint is Print for expressions the builder made, which always print.
func (b *Builder) MustPrint(e Expr) string {
	if b.typedPresence {
		e = b.presenceChains(e)
	}
	s, err := b.Print(e)
	if err != nil {
		panic(fmt.Sprintf("celbuild: unparse: %v", err))
	}
	return s
}

// helper is the parser.ExprHelper the macro expanders build with.
type helper struct{ b *Builder }

var _ parser.ExprHelper = (*helper)(nil)

func (h *helper) Copy(e Expr) Expr                     { return h.b.fac.CopyExpr(e) }
func (h *helper) NewLiteral(v ref.Val) Expr            { return h.b.literal(v) }
func (h *helper) NewList(elems ...Expr) Expr           { return h.b.List(elems...) }
func (h *helper) NewMap(entries ...ast.EntryExpr) Expr { return h.b.fac.NewMap(h.b.id(), entries) }
func (h *helper) NewMapEntry(k, v Expr, opt bool) ast.EntryExpr {
	return h.b.fac.NewMapEntry(h.b.id(), k, v, opt)
}
func (h *helper) NewStruct(name string, fields ...ast.EntryExpr) Expr {
	return h.b.fac.NewStruct(h.b.id(), name, fields)
}
func (h *helper) NewStructField(f string, v Expr, opt bool) ast.EntryExpr {
	return h.b.fac.NewStructField(h.b.id(), f, v, opt)
}
func (h *helper) NewComprehension(r Expr, iter, accu string, init, cond, step, result Expr) Expr {
	return h.b.fac.NewComprehension(h.b.id(), r, iter, accu, init, cond, step, result)
}
func (h *helper) NewComprehensionTwoVar(r Expr, iter, iter2, accu string, init, cond, step, result Expr) Expr {
	return h.b.fac.NewComprehensionTwoVar(h.b.id(), r, iter, iter2, accu, init, cond, step, result)
}
func (h *helper) NewIdent(name string) Expr            { return h.b.Ident(name) }
func (h *helper) NewAccuIdent() Expr                   { return h.b.Ident(h.AccuIdentName()) }
func (h *helper) AccuIdentName() string                { return parser.AccumulatorName }
func (h *helper) NewCall(fn string, args ...Expr) Expr { return h.b.Call(fn, args...) }
func (h *helper) NewMemberCall(fn string, t Expr, args ...Expr) Expr {
	return h.b.Member(fn, t, args...)
}
func (h *helper) NewPresenceTest(e Expr, f string) Expr {
	return h.b.fac.NewPresenceTest(h.b.id(), e, f)
}
func (h *helper) NewSelect(e Expr, f string) Expr      { return h.b.fac.NewSelect(h.b.id(), e, f) }
func (h *helper) OffsetLocation(int64) common.Location { return common.NoLocation }
func (h *helper) NewError(id int64, msg string) *common.Error {
	return &common.Error{ExprID: id, Message: msg, Location: common.NoLocation}
}
