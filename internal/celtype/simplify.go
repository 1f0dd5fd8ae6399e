package celtype

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"

	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/ir"
)

// Simplifier simplifies the expressions of one policy with one builder;
// the reads are those of every expression it simplified.
type Simplifier struct {
	b     *celbuild.Builder
	env   Env
	reads map[string]ir.SchemaRead
	order []string
}

// New simplifies in env.
func New(env Env) *Simplifier {
	return &Simplifier{b: celbuild.New(), env: env, reads: map[string]ir.SchemaRead{}}
}

// Reads are the facts of the schema the simplified expressions rely on.
func (s *Simplifier) Reads() []ir.SchemaRead {
	out := make([]ir.SchemaRead, len(s.order))
	for i, p := range s.order {
		out[i] = s.reads[p]
	}
	return out
}

func (s *Simplifier) read(path, shape string, present bool) {
	if path == "" {
		return
	}
	if _, ok := s.reads[path]; !ok {
		s.order = append(s.order, path)
	}
	r := s.reads[path]
	r.Path, r.Shape, r.Present = path, shape, r.Present || present
	s.reads[path] = r
}

// Expr simplifies the CEL text src and says the type of its value.
func (s *Simplifier) Expr(src string) (string, Type, error) {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true), parser.PopulateMacroCalls(true))
	if err != nil {
		return "", Unknown, err
	}
	parsed, iss := p.Parse(common.NewTextSource(src))
	if len(iss.GetErrors()) > 0 {
		return "", Unknown, fmt.Errorf("%s", iss.ToDisplayString())
	}
	w := &walker{s: s, b: s.b, info: parsed.SourceInfo(), byID: map[int64]ast.Expr{}, scope: map[string]binding{}, built: map[int64]Type{}}
	w.index(parsed.Expr())
	e, t, err := w.expr(parsed.Expr())
	if err != nil {
		return "", Unknown, err
	}
	out, err := s.b.Print(e)
	return out, t, err
}

// binding is what a name stands for in the walk: a type, and, for a
// variable inlined, the expression it stands for.
type binding struct {
	t     Type
	alias celbuild.Expr
}

// walker simplifies one parsed expression.
type walker struct {
	s     *Simplifier
	b     *celbuild.Builder
	info  *ast.SourceInfo
	byID  map[int64]ast.Expr
	scope map[string]binding
	// built are the types of the expressions built, by ID.
	built map[int64]Type
}

// index records every expression by ID, for the macro calls that refer
// to a nested macro's expansion by its ID.
func (w *walker) index(e ast.Expr) {
	w.byID[e.ID()] = e
	switch e.Kind() {
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			w.index(c.Target())
		}
		for _, a := range c.Args() {
			w.index(a)
		}
	case ast.SelectKind:
		w.index(e.AsSelect().Operand())
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.index(el)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			w.index(en.AsMapEntry().Key())
			w.index(en.AsMapEntry().Value())
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		for _, x := range []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			w.index(x)
		}
	}
}

// resolve is the expansion a macro call's argument refers to.
func (w *walker) resolve(e ast.Expr) ast.Expr {
	if e.Kind() == ast.UnspecifiedExprKind {
		return w.byID[e.ID()]
	}
	return e
}

func (w *walker) expr(e ast.Expr) (celbuild.Expr, Type, error) {
	out, t, err := w.typed(e)
	if err == nil {
		w.built[out.ID()] = t
	}
	return out, t, err
}

func (w *walker) typed(e ast.Expr) (celbuild.Expr, Type, error) {
	e = w.resolve(e)
	switch e.Kind() {
	case ast.IdentKind:
		return w.ident(e.AsIdent())
	case ast.LiteralKind:
		return w.b.Literal(e.AsLiteral()), literalType(e.AsLiteral()), nil
	case ast.SelectKind:
		return w.sel(e)
	case ast.CallKind:
		return w.call(e)
	case ast.ListKind:
		return w.list(e)
	case ast.ComprehensionKind:
		return w.comprehension(e)
	case ast.MapKind:
		return w.mapLiteral(e)
	}
	return nil, Unknown, fmt.Errorf("celtype: a %v is not simplified", e.Kind())
}

func (w *walker) ident(name string) (celbuild.Expr, Type, error) {
	if bd, ok := w.scope[name]; ok {
		if bd.alias != nil {
			return bd.alias, bd.t, nil
		}
		return w.b.Ident(name), bd.t, nil
	}
	if t, ok := w.s.env.Vars[name]; ok {
		return w.b.Ident(name), t, nil
	}
	return w.b.Ident(name), Unknown, nil
}

func literalType(v any) Type {
	switch v {
	case types.NullValue:
		return Type{Kind: Null}
	}
	switch v.(type) {
	case types.Bool:
		return Type{Kind: Bool}
	case types.Int:
		return Type{Kind: Int}
	case types.Uint:
		return Type{Kind: Uint}
	case types.Double:
		return Type{Kind: Double}
	case types.String:
		return Type{Kind: String}
	case types.Bytes:
		return Type{Kind: Bytes}
	}
	return Unknown
}

// sel is e.f: a field of the schema, a declared selection
// (variables.x, request.operation), or has(e.f).
func (w *walker) sel(e ast.Expr) (celbuild.Expr, Type, error) {
	s := e.AsSelect()
	if s.Operand().Kind() == ast.IdentKind && w.scope[s.Operand().AsIdent()].t.Kind == Dyn && w.scope[s.Operand().AsIdent()].alias == nil {
		if t, ok := w.s.env.Vars[s.Operand().AsIdent()+"."+s.FieldName()]; ok && !s.IsTestOnly() {
			return w.b.Select(w.b.Ident(s.Operand().AsIdent()), s.FieldName()), t, nil
		}
	}
	op, ot, err := w.expr(s.Operand())
	if err != nil {
		return nil, Unknown, err
	}
	if s.IsTestOnly() {
		return w.presence(op, ot, s.FieldName())
	}
	return w.b.Select(op, s.FieldName()), w.field(ot, s.FieldName()), nil
}

// field is the type of the field f of a value of type t.
func (w *walker) field(t Type, f string) Type {
	if t.Schema && t.Kind == Object {
		if n, ok := t.Node.Field(f); ok {
			return FromSchema(n, ir.SchemaPath(t.Path, f))
		}
		return Type{Kind: Dyn, Rooted: true}
	}
	if t.Schema && t.Kind == Map {
		c := FromSchema(t.Node.Values(), ir.SchemaPath(t.Path, f))
		return c
	}
	if t.Kind == Map && t.Elem != nil {
		return *t.Elem
	}
	return Type{Kind: Dyn, Rooted: t.Rooted}
}

// presence is has(op.f) or "f" in op: true when every object has the
// field, false when the schema has no such field.
func (w *walker) presence(op celbuild.Expr, t Type, f string) (celbuild.Expr, Type, error) {
	if t.Schema && t.Kind == Object && !t.Nullable {
		if _, ok := t.Node.Field(f); !ok {
			w.s.read(ir.SchemaPath(t.Path, f), ir.SchemaAbsent, false)
			return w.b.Bool(false), Type{Kind: Bool}, nil
		}
		if t.Node.AlwaysPresent(f) {
			c, _ := t.Node.Field(f)
			w.s.read(ir.SchemaPath(t.Path, f), c.Shape().String(), true)
			return w.b.Bool(true), Type{Kind: Bool}, nil
		}
	}
	return w.b.Has(op, f), Type{Kind: Bool}, nil
}

func (w *walker) list(e ast.Expr) (celbuild.Expr, Type, error) {
	var elems []celbuild.Expr
	var et *Type
	same := true
	for i, el := range e.AsList().Elements() {
		x, t, err := w.expr(el)
		if err != nil {
			return nil, Unknown, err
		}
		elems = append(elems, x)
		if i == 0 {
			t := t
			et = &t
		} else if et.Kind != t.Kind || et.Nullable != t.Nullable {
			same = false
		}
	}
	if len(e.AsList().OptionalIndices()) > 0 {
		return nil, Unknown, fmt.Errorf("celtype: optional list elements are not simplified")
	}
	t := Type{Kind: List}
	if same && et != nil {
		t.Elem = et
	}
	return w.b.List(elems...), t, nil
}

// mapLiteral is a map literal (the translations raise an evaluation
// error as {}[reason]).
func (w *walker) mapLiteral(e ast.Expr) (celbuild.Expr, Type, error) {
	var entries []celbuild.Expr
	for _, en := range e.AsMap().Entries() {
		me := en.AsMapEntry()
		if me.IsOptional() {
			return nil, Unknown, fmt.Errorf("celtype: an optional map entry is not simplified")
		}
		k, _, err := w.expr(me.Key())
		if err != nil {
			return nil, Unknown, err
		}
		v, _, err := w.expr(me.Value())
		if err != nil {
			return nil, Unknown, err
		}
		entries = append(entries, k, v)
	}
	return w.b.MapLiteral(entries...), Type{Kind: Map}, nil
}

// call simplifies a call: type tests, null tests, presence, the request's
// operation, logical operators, conversions.
func (w *walker) call(e ast.Expr) (celbuild.Expr, Type, error) {
	c := e.AsCall()
	fn := c.FunctionName()
	if out, t, ok, err := w.bindIdiom(e); ok || err != nil {
		return out, t, err
	}
	args := make([]celbuild.Expr, len(c.Args()))
	ts := make([]Type, len(c.Args()))
	for i, a := range c.Args() {
		x, t, err := w.expr(a)
		if err != nil {
			return nil, Unknown, err
		}
		args[i], ts[i] = x, t
	}
	if folded, ok := w.fold(c, args, ts); ok {
		return folded, Type{Kind: Bool}, nil
	}
	switch fn {
	case operators.LogicalAnd:
		return w.b.And(args...), Type{Kind: Bool}, nil
	case operators.LogicalOr:
		return w.b.Or(args...), Type{Kind: Bool}, nil
	case operators.LogicalNot:
		return w.b.Not(args[0]), Type{Kind: Bool}, nil
	case operators.Conditional:
		if requestObject(c.Args()) {
			// The object a request is about: the old object on DELETE, the
			// object otherwise, never null.
			t := ts[2]
			t.Nullable = false
			return w.b.Ternary(args[0], args[1], args[2]), t, nil
		}
		return w.conditional(args, ts)
	case operators.Index:
		return w.indexCall(args, ts, c.Args()[1])
	case operators.OptIndex, operators.OptSelect:
		return w.optional(fn, args, ts, c.Args()[1])
	case operators.In:
		return w.in(args, ts, c.Args()[0])
	case "dyn":
		if !c.IsMemberFunction() && len(args) == 1 {
			if ts[0].Rooted || ts[0].Kind == Dyn {
				return args[0], ts[0], nil
			}
			// The checker must see dyn, but the value keeps its type.
			return w.b.Call("dyn", args...), ts[0], nil
		}
	case "string":
		if !c.IsMemberFunction() && len(args) == 1 && ts[0].concrete() && ts[0].Kind == String {
			return args[0], ts[0], nil
		}
	}
	return w.generic(c, args, ts)
}

// generic rebuilds a call it does not simplify, typed where the function
// says.
func (w *walker) generic(c ast.CallExpr, args []celbuild.Expr, ts []Type) (celbuild.Expr, Type, error) {
	fn := c.FunctionName()
	t := resultType(fn, ts)
	if c.IsMemberFunction() {
		target, tt, err := w.expr(c.Target())
		if err != nil {
			return nil, Unknown, err
		}
		if fn == "orValue" && len(ts) == 1 {
			t = orValueType(tt, ts[0])
		}
		out := w.b.Member(fn, target, args...)
		if folded, ft, ok := w.constant(out, append([]celbuild.Expr{target}, args...)); ok {
			return folded, ft, nil
		}
		return out, t, nil
	}
	out := w.b.Call(fn, args...)
	if folded, ft, ok := w.constant(out, args); ok {
		return folded, ft, nil
	}
	return out, t, nil
}

// pure are the functions a constant call of is evaluated when compiling:
// they read nothing but their arguments.
var pure = map[string]bool{"contains": true, "startsWith": true, "endsWith": true, "matches": true, "replace": true,
	"size": true, "string": true, "int": true, "double": true, "lowerAscii": true, "upperAscii": true, "split": true,
	"join": true, "trim": true, "substring": true, "indexOf": true, "_+_": true, "_-_": true, "_==_": true, "_!=_": true,
	"_<_": true, "_<=_": true, "_>_": true, "_>=_": true, "@in": true, "quantity": true, "isQuantity": true, "compareTo": true}

// constant evaluates a pure call of literals to a literal.
func (w *walker) constant(call celbuild.Expr, args []celbuild.Expr) (celbuild.Expr, Type, bool) {
	if !pure[call.AsCall().FunctionName()] {
		return nil, Unknown, false
	}
	for _, a := range args {
		if !isLiteral(a) {
			return nil, Unknown, false
		}
	}
	v, ok := evalConstant(w.b.MustPrint(call))
	if !ok {
		return nil, Unknown, false
	}
	return w.b.Literal(v), literalType(v), true
}

// isLiteral says whether e is a literal or a list of literals.
func isLiteral(e celbuild.Expr) bool {
	switch e.Kind() {
	case ast.LiteralKind:
		return true
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			if !isLiteral(el) {
				return false
			}
		}
		return len(e.AsList().OptionalIndices()) == 0
	}
	return false
}

// resultType is the type of the functions whose result type is fixed.
func resultType(fn string, ts []Type) Type {
	switch fn {
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals,
		"startsWith", "endsWith", "contains", "matches", "exists", "all", "isQuantity", "hasValue":
		return Type{Kind: Bool}
	case "string", "lowerAscii", "upperAscii", "join", "replace", "substring", "trim":
		return Type{Kind: String}
	case "size", "int", "indexOf", "lastIndexOf":
		return Type{Kind: Int}
	case "double":
		return Type{Kind: Double}
	case "split":
		return Type{Kind: List, Elem: &Type{Kind: String}}
	}
	return Unknown
}

// orValueType is the type of an optional's orValue(d): the optional's
// value type, nullable when d is null.
func orValueType(opt, d Type) Type {
	out := opt
	out.Nullable = opt.Nullable || d.Kind == Null
	if d.Kind != Null && d.Kind != opt.Kind {
		return Unknown
	}
	return out
}

// conditional is c ? a : b.
func (w *walker) conditional(args []celbuild.Expr, ts []Type) (celbuild.Expr, Type, error) {
	t := join(ts[1], ts[2])
	if ts[1].Kind == Bool && ts[2].Kind == Bool {
		return w.b.Cond(args[0], args[1], args[2]), t, nil
	}
	switch {
	case celbuild.IsTrue(args[0]):
		return args[1], ts[1], nil
	case celbuild.IsFalse(args[0]):
		return args[2], ts[2], nil
	}
	return w.b.Ternary(args[0], args[1], args[2]), t, nil
}

// join is the type of a value of type a or b.
func join(a, b Type) Type {
	switch {
	case a.Kind == Null:
		b.Nullable = true
		return b
	case b.Kind == Null:
		a.Nullable = true
		return a
	case a.Kind == b.Kind && a.Schema == b.Schema && a.Path == b.Path:
		a.Nullable = a.Nullable || b.Nullable
		a.Facts = append(append([]ir.SchemaRead(nil), a.Facts...), b.Facts...)
		return a
	case a.Kind == b.Kind && a.Kind != Dyn && a.Kind != Object && a.Kind != List && a.Kind != Map:
		// Scalars of one kind from different places.
		return Type{Kind: a.Kind, Nullable: a.Nullable || b.Nullable, Rooted: a.Rooted && b.Rooted,
			Facts: append(append([]ir.SchemaRead(nil), a.Facts...), b.Facts...)}
	}
	return Type{Kind: Dyn, Rooted: a.Rooted && b.Rooted}
}

// indexCall is e[k]: a field of an object by its name is e.name.
func (w *walker) indexCall(args []celbuild.Expr, ts []Type, key ast.Expr) (celbuild.Expr, Type, error) {
	if i, ok := key.AsLiteral().(types.Int); key.Kind() == ast.LiteralKind && ok && args[0].Kind() == ast.ListKind && len(args[0].AsList().OptionalIndices()) == 0 {
		if els := args[0].AsList().Elements(); i >= 0 && int(i) < len(els) {
			return els[i], w.typeOfBuilt(els[i]), nil
		}
	}
	if k, ok := stringLiteral(key); ok && ts[0].Kind.isMap() {
		if ts[0].Kind == Object && celbuild.Selectable(k) {
			return w.b.Select(args[0], k), w.field(ts[0], k), nil
		}
		return w.b.Index(args[0], args[1]), w.field(ts[0], k), nil
	}
	return w.b.Index(args[0], args[1]), ts[0].elem(), nil
}

// optional is e[?k] or e.?f: of an object, e.?name.
func (w *walker) optional(fn string, args []celbuild.Expr, ts []Type, key ast.Expr) (celbuild.Expr, Type, error) {
	k, ok := stringLiteral(key)
	if !ok {
		return w.b.Call(fn, args...), Unknown, nil
	}
	t := w.field(ts[0], k)
	if ts[0].Kind.isMap() {
		return w.b.OptionalSelect(args[0], k), t, nil
	}
	return w.b.Call(fn, args...), t, nil
}

// in is x in container: "f" in an object is a presence test.
func (w *walker) in(args []celbuild.Expr, ts []Type, key ast.Expr) (celbuild.Expr, Type, error) {
	if k, ok := stringLiteral(key); ok && ts[1].Kind == Object {
		return w.presence(args[1], ts[1], k)
	}
	return w.b.In(args[0], args[1]), Type{Kind: Bool}, nil
}

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// fold folds type(x) == T, x == null and request.operation == OP where
// the types decide them.
func (w *walker) fold(c ast.CallExpr, args []celbuild.Expr, ts []Type) (celbuild.Expr, bool) {
	fn := c.FunctionName()
	if fn != operators.Equals && fn != operators.NotEquals || len(args) != 2 {
		return nil, false
	}
	is, ok := w.equality(c.Args(), args, ts)
	if !ok {
		return nil, false
	}
	if fn == operators.NotEquals {
		return w.b.Not(is), true
	}
	return is, true
}

// equality decides a == b where it can: a type test, a null test, the
// request's operation.
func (w *walker) equality(raw []ast.Expr, args []celbuild.Expr, ts []Type) (celbuild.Expr, bool) {
	for i := range 2 {
		j := 1 - i
		if x, t, ok := w.typeOfArg(raw[i]); ok && raw[j].Kind() == ast.IdentKind {
			want, known := celTypeNames[raw[j].AsIdent()]
			if !known {
				return nil, false
			}
			return w.typeIs(x, t, want)
		}
		if isNull(raw[j]) {
			if out, ok := w.isNullValue(args[i], ts[i]); ok {
				return out, true
			}
		}
		if op, ok := stringLiteral(raw[j]); ok && isOperation(raw[i]) && len(w.s.env.Operations) > 0 {
			if !slices.Contains(w.s.env.Operations, ir.Operation(op)) {
				return w.b.Bool(false), true
			}
			if len(w.s.env.Operations) == 1 {
				return w.b.Bool(true), true
			}
		}
	}
	return nil, false
}

// isNullValue decides x == null: false for a value of a known type that
// is not nullable; over a conditional, the branches' answers.
func (w *walker) isNullValue(x celbuild.Expr, t Type) (celbuild.Expr, bool) {
	if c, a, b, ok := w.b.AsTernary(x); ok {
		an, aok := w.isNullValue(a, w.typeOfBuilt(a))
		bn, bok := w.isNullValue(b, w.typeOfBuilt(b))
		if aok && bok {
			return w.b.Cond(c, an, bn), true
		}
		return nil, false
	}
	switch {
	case x.Kind() == ast.LiteralKind:
		return w.b.Bool(x.AsLiteral() == types.NullValue), true
	case t.Kind != Dyn && t.Kind != Null && !t.Nullable:
		w.rely(t)
		return w.b.Bool(false), true
	}
	return nil, false
}

// rely records the schema facts a type rests on, as a fold uses it.
func (w *walker) rely(t Type) {
	for _, f := range t.Facts {
		w.s.read(f.Path, f.Shape, false)
	}
}

// typeOfBuilt is the type of a built expression the walker typed: the
// types of the branches of conditionals it built are remembered.
func (w *walker) typeOfBuilt(e celbuild.Expr) Type {
	if t, ok := w.built[e.ID()]; ok {
		return t
	}
	return Unknown
}

// typeOfArg is x of type(x), simplified.
func (w *walker) typeOfArg(e ast.Expr) (celbuild.Expr, Type, bool) {
	e = w.resolve(e)
	if e.Kind() != ast.CallKind {
		return nil, Unknown, false
	}
	c := e.AsCall()
	if c.FunctionName() != "type" || c.IsMemberFunction() || len(c.Args()) != 1 {
		return nil, Unknown, false
	}
	x, t, err := w.expr(c.Args()[0])
	if err != nil {
		return nil, Unknown, false
	}
	return x, t, true
}

// typeIs decides type(x) == want for x of type t.
func (w *walker) typeIs(x celbuild.Expr, t Type, want Kind) (celbuild.Expr, bool) {
	if t.Kind == Dyn {
		return nil, false
	}
	w.rely(t)
	matches := t.Kind == want || t.Kind == Object && want == Map
	switch {
	case t.Kind == Null:
		return w.b.Bool(want == Null), true
	case !t.Nullable:
		return w.b.Bool(matches), true
	case want == Null:
		return w.nullTest(x, t), true
	case matches:
		return w.b.Not(w.nullTest(x, t)), true
	}
	return w.b.Bool(false), true
}

// nullTest is x == null, decided where it can be.
func (w *walker) nullTest(x celbuild.Expr, t Type) celbuild.Expr {
	if out, ok := w.isNullValue(x, t); ok {
		return out
	}
	return w.b.Eq(x, w.b.Null())
}

// requestObject says whether a conditional's arguments are
// request.operation == "DELETE" ? oldObject : object.
func requestObject(args []ast.Expr) bool {
	c := args[0]
	if c.Kind() != ast.CallKind || c.AsCall().FunctionName() != operators.Equals {
		return false
	}
	op, ok := stringLiteral(c.AsCall().Args()[1])
	return ok && op == "DELETE" && isOperation(c.AsCall().Args()[0]) &&
		args[1].Kind() == ast.IdentKind && args[1].AsIdent() == "oldObject" && args[2].Kind() == ast.IdentKind && args[2].AsIdent() == "object"
}

func isNull(e ast.Expr) bool {
	return e.Kind() == ast.LiteralKind && e.AsLiteral() == types.NullValue
}

func isOperation(e ast.Expr) bool {
	if e.Kind() != ast.SelectKind {
		return false
	}
	s := e.AsSelect()
	return !s.IsTestOnly() && s.FieldName() == "operation" && s.Operand().Kind() == ast.IdentKind && s.Operand().AsIdent() == "request"
}

// EagerBindPrefix starts the name of a value the translations bind to be
// read where it is bound, before the body, because its failure fails the
// whole expression wherever the body would read it (a Kyverno pattern's
// {{ }} values, substituted before the pattern is matched): such a bind is
// never written inline.
const EagerBindPrefix = "patternValue"

// bindIdiom is [init].map(v, body)[0], which the translations use to name
// a value: written inline where v is used once or init is a path, else
// kept with v typed.
func (w *walker) bindIdiom(e ast.Expr) (celbuild.Expr, Type, bool, error) {
	c := e.AsCall()
	if c.FunctionName() != operators.Index || len(c.Args()) != 2 {
		return nil, Unknown, false, nil
	}
	zero, ok := c.Args()[1].AsLiteral().(types.Int)
	if c.Args()[1].Kind() != ast.LiteralKind || !ok || zero != 0 {
		return nil, Unknown, false, nil
	}
	comp := w.resolve(c.Args()[0])
	call, ok := w.info.GetMacroCall(comp.ID())
	if comp.Kind() != ast.ComprehensionKind || !ok || call.AsCall().FunctionName() != "map" || len(call.AsCall().Args()) != 2 {
		return nil, Unknown, false, nil
	}
	target := w.resolve(call.AsCall().Target())
	if target.Kind() != ast.ListKind || len(target.AsList().Elements()) != 1 {
		return nil, Unknown, false, nil
	}
	v := call.AsCall().Args()[0].AsIdent()
	init, it, err := w.expr(target.AsList().Elements()[0])
	if err != nil {
		return nil, Unknown, true, err
	}
	body := w.resolve(call.AsCall().Args()[1])
	saved, had := w.scope[v]
	defer func() {
		if had {
			w.scope[v] = saved
		} else {
			delete(w.scope, v)
		}
	}()
	// A value read only to be evaluated (a Kyverno context variable a
	// condition mentions: its failure fails the rule) keeps its
	// evaluation when the body does not use it.
	// So is a value named to be read eagerly (EagerBindPrefix).
	eager := strings.HasPrefix(v, EagerBindPrefix)
	unused := w.uses(body, v) == 0 && w.b.Uses(init, "variables") > 0 || eager
	keep := func(celbuild.Expr) bool { return unused }
	if isPath(init) && !eager {
		w.scope[v] = binding{t: it, alias: init}
		out, t, err := w.expr(body)
		if err == nil && keep(out) {
			return w.b.Index(w.b.Map(w.b.List(init), v, out), w.b.Int(0)), t, true, nil
		}
		return out, t, true, err
	}
	w.scope[v] = binding{t: it}
	out, t, err := w.expr(body)
	if err != nil {
		return nil, Unknown, true, err
	}
	if w.b.Uses(out, v) <= 1 && !keep(out) {
		return w.b.Substitute(out, v, init), t, true, nil
	}
	return w.b.Index(w.b.Map(w.b.List(init), v, out), w.b.Int(0)), t, true, nil
}

// isPath says whether e is a name or a chain of field selections and
// literal indexes of one.
func isPath(e celbuild.Expr) bool {
	switch e.Kind() {
	case ast.IdentKind, ast.LiteralKind:
		return true
	case ast.SelectKind:
		return !e.AsSelect().IsTestOnly() && isPath(e.AsSelect().Operand())
	case ast.CallKind:
		c := e.AsCall()
		if (c.FunctionName() == operators.Index || c.FunctionName() == operators.OptSelect || c.FunctionName() == operators.OptIndex) && len(c.Args()) == 2 {
			return isPath(c.Args()[0]) && c.Args()[1].Kind() == ast.LiteralKind
		}
		if c.FunctionName() == "dyn" && len(c.Args()) == 1 {
			return isPath(c.Args()[0])
		}
		if c.FunctionName() == operators.Conditional {
			return (isPresence(c.Args()[0]) || isOperationTest(c.Args()[0])) && isPath(c.Args()[1]) && isPath(c.Args()[2])
		}
	}
	return false
}

// isOperationTest says whether e is request.operation == "LITERAL".
func isOperationTest(e celbuild.Expr) bool {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != operators.Equals {
		return false
	}
	a := e.AsCall().Args()
	return isOperation(a[0]) && a[1].Kind() == ast.LiteralKind
}

// isPresence says whether e is has(path).
func isPresence(e celbuild.Expr) bool {
	return e.Kind() == ast.SelectKind && e.AsSelect().IsTestOnly() && isPath(e.AsSelect().Operand())
}

// uses counts the identifiers named v in e (macro calls included).
func (w *walker) uses(e ast.Expr, v string) int {
	e = w.resolve(e)
	n := 0
	switch e.Kind() {
	case ast.IdentKind:
		if e.AsIdent() == v {
			n++
		}
	case ast.SelectKind:
		n += w.uses(e.AsSelect().Operand(), v)
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			n += w.uses(c.Target(), v)
		}
		for _, a := range c.Args() {
			n += w.uses(a, v)
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			n += w.uses(el, v)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			n += w.uses(en.AsMapEntry().Key(), v) + w.uses(en.AsMapEntry().Value(), v)
		}
	case ast.ComprehensionKind:
		if call, ok := w.info.GetMacroCall(e.ID()); ok {
			return w.uses(call, v)
		}
		c := e.AsComprehension()
		for _, x := range []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			n += w.uses(x, v)
		}
	}
	return n
}

// comprehension is a macro (all, exists, map, filter, transformList)
// rebuilt with its variables typed; any other comprehension is refused.
func (w *walker) comprehension(e ast.Expr) (celbuild.Expr, Type, error) {
	call, ok := w.info.GetMacroCall(e.ID())
	if !ok {
		return nil, Unknown, fmt.Errorf("celtype: a comprehension that is no macro is not simplified")
	}
	mc := call.AsCall()
	target, tt, err := w.expr(mc.Target())
	if err != nil {
		return nil, Unknown, err
	}
	args := mc.Args()
	name := mc.FunctionName()
	switch {
	case len(args) == 2 && (name == "all" || name == "exists" || name == "map" || name == "filter" || name == "exists_one"):
		return w.macro1(name, target, tt, args)
	case name == "transformList" && (len(args) == 3 || len(args) == 4):
		return w.transformList(target, tt, args)
	}
	return nil, Unknown, fmt.Errorf("celtype: the macro %s is not simplified", name)
}

// within simplifies body with names bound to types.
func (w *walker) within(body ast.Expr, names map[string]Type) (celbuild.Expr, Type, error) {
	saved := map[string]binding{}
	for n, t := range names {
		if old, ok := w.scope[n]; ok {
			saved[n] = old
		}
		w.scope[n] = binding{t: t}
	}
	defer func() {
		for n := range names {
			if old, ok := saved[n]; ok {
				w.scope[n] = old
			} else {
				delete(w.scope, n)
			}
		}
	}()
	return w.expr(body)
}

func (w *walker) macro1(name string, target celbuild.Expr, tt Type, args []ast.Expr) (celbuild.Expr, Type, error) {
	v := args[0].AsIdent()
	body, bt, err := w.within(args[1], map[string]Type{v: tt.keyType()})
	if err != nil {
		return nil, Unknown, err
	}
	if (name == "all" || name == "exists") && isLiteral(target) && target.Kind() == ast.ListKind && len(target.AsList().Elements()) <= maxUnrolled {
		return w.unroll(name, target, v, args[1]), Type{Kind: Bool}, nil
	}
	switch name {
	case "all":
		return w.b.All(target, v, body), Type{Kind: Bool}, nil
	case "exists":
		return w.b.Exists(target, v, body), Type{Kind: Bool}, nil
	case "map":
		if body.Kind() == ast.IdentKind && body.AsIdent() == v {
			return target, tt, nil
		}
		if target.Kind() == ast.ListKind && len(target.AsList().Elements()) == 1 && len(target.AsList().OptionalIndices()) == 0 {
			// [x].map(v, f) is [f(x)].
			return w.b.List(w.b.Substitute(body, v, target.AsList().Elements()[0])), Type{Kind: List, Elem: &bt}, nil
		}
		return w.b.Map(target, v, body), Type{Kind: List, Elem: &bt}, nil
	case "filter":
		return w.b.Filter(target, v, body), Type{Kind: List, Elem: ptr(tt.keyType())}, nil
	}
	return w.b.Member("exists_one", target, w.b.Ident(v), body), Type{Kind: Bool}, nil
}

func ptr(t Type) *Type { return &t }

// maxUnrolled is the longest literal list an all or exists is written out
// over, one term per element.
const maxUnrolled = 8

// unroll writes all or exists over a literal list as the && or || of the
// body on each element, each simplified with the element for v.
func (w *walker) unroll(name string, target celbuild.Expr, v string, body ast.Expr) celbuild.Expr {
	var terms []celbuild.Expr
	for _, el := range target.AsList().Elements() {
		saved, had := w.scope[v]
		w.scope[v] = binding{t: w.typeOfBuilt(el), alias: el}
		x, _, err := w.expr(body)
		if had {
			w.scope[v] = saved
		} else {
			delete(w.scope, v)
		}
		if err != nil {
			return w.b.Member(name, target, w.b.Ident(v), w.b.Ident(v))
		}
		terms = append(terms, x)
	}
	if name == "all" {
		return w.b.And(terms...)
	}
	return w.b.Or(terms...)
}

func (w *walker) transformList(target celbuild.Expr, tt Type, args []ast.Expr) (celbuild.Expr, Type, error) {
	i, v := args[0].AsIdent(), args[1].AsIdent()
	names := map[string]Type{i: {Kind: Int}, v: tt.keyType()}
	var filter celbuild.Expr
	if len(args) == 4 {
		f, _, err := w.within(args[2], names)
		if err != nil {
			return nil, Unknown, err
		}
		filter = f
	}
	body, bt, err := w.within(args[len(args)-1], names)
	if err != nil {
		return nil, Unknown, err
	}
	return w.b.TransformList(target, i, v, filter, body), Type{Kind: List, Elem: &bt}, nil
}

// Builder is the builder the simplifier writes with.
func (s *Simplifier) Builder() *celbuild.Builder { return s.b }
