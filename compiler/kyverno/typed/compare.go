package typed

import (
	"fmt"
	"math"

	gojmespath "github.com/kyverno/go-jmespath"

	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
)

// JMESPath's comparators and logical operators, as Kyverno's go-jmespath
// fork evaluates them (interpreter.go): a missing field is null on either
// side of a comparator; == and != compare JSON values deeply (a value
// equals a literal only if both are of the same JSON type), <, <=, > and
// >= compare numbers and give null for anything else. In a filter, a
// condition keeps an element when it is truthy: `a && b` when both are,
// `a || b` when either is, `!a` when a is not.

// filterCond is a filter's condition over cur as a CEL boolean: whether
// JMESPath's value of n is truthy. mayErr says evaluating it may fail.
func (q *query) filterCond(n gojmespath.ASTNode, cur qval) (celbuild.Expr, bool, error) {
	switch n.NodeType {
	case gojmespath.ASTAndExpression, gojmespath.ASTOrExpression:
		l, le, err := q.filterCond(n.Children[0], cur)
		if err != nil {
			return nil, false, err
		}
		r, re, err := q.filterCond(n.Children[1], cur)
		if err != nil {
			return nil, false, err
		}
		if n.NodeType == gojmespath.ASTAndExpression {
			// One chain, each presence test once.
			return q.b.And(append(celbuild.Conjuncts(l), celbuild.Conjuncts(r)...)...), le || re, nil
		}
		return q.b.Or(l, r), le || re, nil
	case gojmespath.ASTNotExpression:
		x, e, err := q.filterCond(n.Children[0], cur)
		if err != nil {
			return nil, false, err
		}
		return q.b.Not(x), e, nil
	case gojmespath.ASTComparator:
		c, err := q.comparison(n, cur, true)
		return c, false, err
	}
	cond, err := q.node(n, cur, false)
	if err != nil {
		return nil, false, err
	}
	truthy, err := q.truthy(cond)
	return truthy, cond.kind == qScalar && cond.scalar.mayErr, err
}

// comparator is a comparator outside a filter: == and != only (the
// others may give null).
func (q *query) comparator(n gojmespath.ASTNode, cur qval) (qval, error) {
	e, err := q.comparison(n, cur, false)
	if err != nil {
		return qval{}, err
	}
	return qval{kind: qScalar, scalar: &qscalar{expr: e, shape: kubeschema.Boolean, plain: true}}, nil
}

// comparison is a comparator as a CEL boolean: == and != as themselves;
// with ordering (in a filter, where null is not truthy) <, <=, >, >= as
// true when both sides are numbers and compare so.
func (q *query) comparison(n gojmespath.ASTNode, cur qval, ordering bool) (celbuild.Expr, error) {
	op := fmt.Sprint(n.Value)
	left, err := q.node(n.Children[0], cur, false)
	if err != nil {
		return nil, err
	}
	right, err := q.node(n.Children[1], cur, false)
	if err != nil {
		return nil, err
	}
	if left.kind == qLit && right.kind != qLit {
		left, right = right, left
		op = map[string]string{"tLT": "tGT", "tLTE": "tGTE", "tGT": "tLT", "tGTE": "tLTE"}[op] + map[string]string{"tEQ": "tEQ", "tNE": "tNE"}[op]
	}
	switch op {
	case "tEQ", "tNE":
		eq, err := q.equal(left, right)
		if err != nil {
			return nil, err
		}
		if op == "tNE" {
			return q.b.Not(eq), nil
		}
		return eq, nil
	case "tLT", "tLTE", "tGT", "tGTE":
		if !ordering {
			return nil, q.refuse("an ordering comparator outside a filter")
		}
		return q.ordered(op, left, right)
	}
	return nil, q.refuse("the comparator %s", op)
}

// operand is a side of a comparator that is a typed scalar: its CEL, its
// shape and when it is there (nil: always).
type operand struct {
	expr    celbuild.Expr
	shape   kubeschema.Shape
	present celbuild.Expr
}

func (q *query) operand(v qval) (operand, error) {
	switch v.kind {
	case qScalar:
		if v.scalar.mayErr {
			return operand{}, q.refuse("a comparison of a value that may fail")
		}
		return operand{expr: v.scalar.expr, shape: v.scalar.shape}, nil
	case qPath:
		p := v.path
		if p.hasDflt {
			return operand{}, q.refuse("a comparison of a defaulted value")
		}
		switch p.shape() {
		case kubeschema.String, kubeschema.Boolean, kubeschema.Integer:
			return operand{expr: p.expr(q.b), shape: p.shape(), present: p.present(q.b)}, nil
		}
		return operand{}, q.refuse("a comparison of a value of shape %s", p.shape())
	}
	return operand{}, q.refuse("a comparison of this value")
}

// equal is JMESPath's == of a and b (b may be a literal).
func (q *query) equal(a, b qval) (celbuild.Expr, error) {
	if a.kind == qNull && b.kind == qNull {
		return q.b.Bool(true), nil
	}
	if a.kind == qNull || a.kind == qLit && b.kind != qLit {
		a, b = b, a
	}
	if b.kind == qNull || b.kind == qLit && b.lit == nil {
		// Equal to null: missing (the API server never stores a null).
		if a.kind != qPath || a.path.hasDflt {
			return nil, q.refuse("a comparison with null of a computed value")
		}
		present := a.path.present(q.b)
		if present == nil {
			return q.b.Bool(false), nil
		}
		return q.b.Not(present), nil
	}
	x, err := q.operand(a)
	if err != nil {
		return nil, err
	}
	if b.kind == qLit {
		lit, ok, err := q.literalOfShape(b.lit, x.shape)
		if err != nil {
			return nil, err
		}
		if !ok {
			// Values of different JSON types are never equal.
			return q.b.Bool(false), nil
		}
		if x.present != nil && a.kind == qPath {
			// A field that may be missing, as an optional chain with a
			// default that is not the literal.
			opt, _ := a.path.optional(q.b)
			switch l := b.lit.(type) {
			case bool:
				if l {
					return q.b.OrValue(opt, q.b.Bool(false)), nil
				}
				return q.b.Not(q.b.OrValue(opt, q.b.Bool(true))), nil
			case string:
				if l != "" {
					return q.b.Eq(q.b.OrValue(opt, q.b.String("")), lit), nil
				}
			}
		}
		return andMaybe(q.b, x.present, q.b.Eq(x.expr, lit)), nil
	}
	y, err := q.operand(b)
	if err != nil {
		return nil, err
	}
	if x.shape != y.shape {
		return nil, q.refuse("a comparison of values of shapes %s and %s", x.shape, y.shape)
	}
	eq := q.b.Eq(x.expr, y.expr)
	switch {
	case x.present == nil && y.present == nil:
		return eq, nil
	case x.present == nil:
		return q.b.And(y.present, eq), nil
	case y.present == nil:
		return q.b.And(x.present, eq), nil
	}
	// Both missing (null == null), or both there and equal.
	return q.b.Or(q.b.And(x.present, y.present, eq), q.b.And(q.b.Not(x.present), q.b.Not(y.present))), nil
}

// literalOfShape is a JSON literal as a CEL literal of shape s; false when
// no value of that shape equals it.
func (q *query) literalOfShape(v any, s kubeschema.Shape) (celbuild.Expr, bool, error) {
	switch t := v.(type) {
	case string:
		return q.b.String(t), s == kubeschema.String, nil
	case bool:
		return q.b.Bool(t), s == kubeschema.Boolean, nil
	case float64:
		if s != kubeschema.Integer {
			return nil, false, nil
		}
		if t != math.Trunc(t) {
			return nil, false, nil
		}
		if math.Abs(t) >= 1<<53 {
			return nil, false, q.refuse("a number beyond float64's integers")
		}
		return q.b.Int(int64(t)), true, nil
	case []any, map[string]any:
		return nil, false, q.refuse("a comparison with a list or object literal")
	}
	return nil, false, q.refuse("a comparison with a literal of type %T", v)
}

// ordered is <, <=, >, >= of a typed integer and a number literal, true
// when the integer is there and compares so (null otherwise, which a
// filter does not keep).
func (q *query) ordered(op string, a, b qval) (celbuild.Expr, error) {
	x, err := q.operand(a)
	if err != nil {
		return nil, err
	}
	if x.shape != kubeschema.Integer || b.kind != qLit {
		return nil, q.refuse("an ordering comparator on anything but an integer and a number")
	}
	f, ok := b.lit.(float64)
	if !ok {
		// null: not a number.
		return q.b.Bool(false), nil
	}
	if f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
		return nil, q.refuse("an ordering comparator with a number that is not an integer")
	}
	cmp := map[string]string{"tLT": "<", "tLTE": "<=", "tGT": ">", "tGTE": ">="}[op]
	return andMaybe(q.b, x.present, q.b.Compare(cmp, x.expr, q.b.Int(int64(f)))), nil
}

// pipe is `left | right`: right evaluated on left's value, a projection
// ending at the pipe.
func (q *query) pipe(n gojmespath.ASTNode, cur qval, strict bool) (qval, error) {
	left, err := q.node(n.Children[0], cur, strict)
	if err != nil {
		return qval{}, err
	}
	if left.kind == qPseudo || left.kind == qMulti {
		return qval{}, q.refuse("a pipe from this value")
	}
	return q.node(n.Children[1], left, strict)
}

// toString is to_string() of a string or boolean: the string itself,
// the boolean as its JSON text, a missing value as null's ("null").
func (q *query) toString(v qval) (qval, error) {
	str := func(e celbuild.Expr, mayErr bool) (qval, error) {
		return qval{kind: qScalar, scalar: &qscalar{expr: e, shape: kubeschema.String, mayErr: mayErr}}, nil
	}
	switch v.kind {
	case qNull:
		return qval{kind: qLit, lit: "null"}, nil
	case qLit:
		switch v.lit.(type) {
		case nil, []any, map[string]any:
		default:
			if text, ok := literalText(v.lit); ok {
				return qval{kind: qLit, lit: text}, nil
			}
		}
	case qScalar:
		switch v.scalar.shape {
		case kubeschema.String:
			return v, nil
		case kubeschema.Boolean:
			return str(q.b.Call("string", v.scalar.expr), v.scalar.mayErr)
		}
	case qPath:
		p := v.path
		if p.hasDflt || p.mayErr() {
			break
		}
		present := p.present(q.b)
		switch p.shape() {
		case kubeschema.String:
			if present == nil {
				return str(p.expr(q.b), false)
			}
			opt, _ := p.optional(q.b)
			return str(q.b.OrValue(opt, q.b.String("null")), false)
		case kubeschema.Boolean:
			text := q.b.Call("string", p.expr(q.b))
			if present == nil {
				return str(text, false)
			}
			return str(q.b.Ternary(present, text, q.b.String("null")), false)
		}
	}
	return qval{}, q.refuse("to_string() of a value that is not a string or a boolean")
}

// stringArg is a function's argument that must be a string: its CEL,
// whether it may fail (a string that may be missing fails the function).
func (q *query) stringArg(v qval) (celbuild.Expr, bool, error) {
	switch v.kind {
	case qLit:
		if s, ok := v.lit.(string); ok {
			return q.b.String(s), false, nil
		}
	case qScalar:
		if v.scalar.shape == kubeschema.String {
			return v.scalar.expr, v.scalar.mayErr, nil
		}
	case qPath:
		p := v.path
		if p.shape() != kubeschema.String {
			break
		}
		switch {
		case p.hasDflt && p.dflt == "":
			opt, _ := p.optional(q.b)
			return q.b.OrValue(opt, q.b.String("")), false, nil
		case !p.hasDflt && p.present(q.b) == nil:
			return p.expr(q.b), false, nil
		}
	}
	return nil, false, q.refuse("a function argument that may not be a string")
}
