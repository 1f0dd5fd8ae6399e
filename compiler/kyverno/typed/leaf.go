package typed

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
)

// A scalar pattern's predicate is taken from the exact translation
// (pattern.Predicate: CEL over a value of any type, differentially tested
// against Kyverno's pattern.Validate) and specialised for the value's type
// from the schema: a test of the value's type is folded to true or false,
// the branches it rules out disappear, string(x) of a string is x, and a
// predicate over a boolean is evaluated for true and for false and becomes
// one of true, false, x or !x.

// leafParser parses the exact predicates, with the macros they use.
var leafParser = sync.OnceValue(func() *parser.Parser {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true))
	if err != nil {
		panic(err)
	}
	return p
})

// typeNames are the CEL type identifiers a predicate tests the value
// against, and the shapes whose values have that type.
var typeNames = map[string][]kubeschema.Shape{
	"string": {kubeschema.String}, "int": {kubeschema.Integer}, "bool": {kubeschema.Boolean},
	"double": nil, "uint": nil, "list": {kubeschema.List}, "map": {kubeschema.Object, kubeschema.Map}, "null_type": nil,
}

// specializer rebuilds an exact predicate over the variable v with v's
// shape known.
type specializer struct {
	b     *celbuild.Builder
	v     string
	value celbuild.Expr
	shape kubeschema.Shape
}

// predicate specialises the CEL text pred (over the variable v) for a
// value of shape, substituting value for v.
func predicate(b *celbuild.Builder, pred, v string, value celbuild.Expr, shape kubeschema.Shape) (celbuild.Expr, error) {
	if shape == kubeschema.Boolean {
		return booleanPredicate(b, pred, v, value)
	}
	parsed, iss := leafParser().Parse(common.NewTextSource(pred))
	if len(iss.GetErrors()) > 0 {
		return nil, fmt.Errorf("predicate %s: %s", pred, iss.ToDisplayString())
	}
	s := &specializer{b: b, v: v, value: value, shape: shape}
	return s.expr(parsed.Expr())
}

// booleanPredicate evaluates pred for true and false.
func booleanPredicate(b *celbuild.Builder, pred, v string, value celbuild.Expr) (celbuild.Expr, error) {
	onTrue, err := evalBool(pred, v, true)
	if err != nil {
		return nil, err
	}
	onFalse, err := evalBool(pred, v, false)
	if err != nil {
		return nil, err
	}
	switch {
	case onTrue && onFalse:
		return b.Bool(true), nil
	case onTrue:
		return value, nil
	case onFalse:
		return b.Not(value), nil
	}
	return b.Bool(false), nil
}

// evalEnv evaluates predicates over the variable x (and y, for two
// values) at compile time, in
// the API server's base environment (quantity, isQuantity and the other
// libraries they call).
var evalEnv = sync.OnceValues(func() (*cel.Env, error) {
	base, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
	if err != nil {
		return nil, err
	}
	return base.Extend(cel.Variable("x", cel.DynType), cel.Variable("y", cel.DynType))
})

// evalBool evaluates the predicate pred over x with x holding value.
func evalBool(pred, v string, value any) (bool, error) {
	if v != "x" {
		return false, fmt.Errorf("predicates are evaluated over x, not %s", v)
	}
	prg, err := evalProgram(pred)
	if err != nil {
		return false, err
	}
	out, _, err := prg.Eval(map[string]any{"x": value})
	if err != nil {
		return false, err
	}
	bv, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("predicate %s is not a boolean", pred)
	}
	return bv, nil
}

// programs are the predicates compiled so far, by their text: a
// translation evaluates one exact predicate on many probe values, and
// checking it is most of the cost.
var programs sync.Map

type compiled struct {
	prg cel.Program
	err error
}

// evalProgram is pred compiled (checked) in evalEnv, once per text.
func evalProgram(pred string) (cel.Program, error) {
	if c, ok := programs.Load(pred); ok {
		return c.(compiled).prg, c.(compiled).err
	}
	env, err := evalEnv()
	if err != nil {
		return nil, err
	}
	var c compiled
	if a, iss := env.Compile(pred); iss.Err() != nil {
		c.err = iss.Err()
	} else {
		c.prg, c.err = env.Program(a)
	}
	programs.Store(pred, c)
	return c.prg, c.err
}

func (s *specializer) expr(e ast.Expr) (celbuild.Expr, error) {
	switch e.Kind() {
	case ast.IdentKind:
		if e.AsIdent() == s.v {
			return s.value, nil
		}
		return s.b.Ident(e.AsIdent()), nil
	case ast.LiteralKind:
		return s.b.Literal(e.AsLiteral()), nil
	case ast.SelectKind:
		sel := e.AsSelect()
		op, err := s.expr(sel.Operand())
		if err != nil {
			return nil, err
		}
		if sel.IsTestOnly() {
			return s.b.Has(op, sel.FieldName()), nil
		}
		return s.b.Select(op, sel.FieldName()), nil
	case ast.ListKind:
		var elems []celbuild.Expr
		for _, el := range e.AsList().Elements() {
			x, err := s.expr(el)
			if err != nil {
				return nil, err
			}
			elems = append(elems, x)
		}
		return s.b.List(elems...), nil
	case ast.CallKind:
		return s.call(e.AsCall())
	}
	return nil, fmt.Errorf("a %v in a scalar predicate is not specialised", e.Kind())
}

func (s *specializer) call(c ast.CallExpr) (celbuild.Expr, error) {
	fn := c.FunctionName()
	if folded, ok := s.typeTest(fn, c.Args()); ok {
		return folded, nil
	}
	args := make([]celbuild.Expr, len(c.Args()))
	for i, a := range c.Args() {
		x, err := s.expr(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	switch fn {
	case operators.LogicalAnd:
		return s.b.And(args...), nil
	case operators.LogicalOr:
		return s.b.Or(args...), nil
	case operators.LogicalNot:
		return s.b.Not(args[0]), nil
	case operators.Conditional:
		return s.b.Ternary(args[0], args[1], args[2]), nil
	case "string":
		if !c.IsMemberFunction() && len(args) == 1 && args[0] == s.value && s.shape == kubeschema.String {
			return s.value, nil
		}
	}
	if c.IsMemberFunction() {
		target, err := s.expr(c.Target())
		if err != nil {
			return nil, err
		}
		return s.b.Member(fn, target, args...), nil
	}
	return s.b.Call(fn, args...), nil
}

// typeTest folds type(v) == T and type(v) != T, and v == null, for the
// value's shape.
func (s *specializer) typeTest(fn string, args []ast.Expr) (celbuild.Expr, bool) {
	if fn != operators.Equals && fn != operators.NotEquals || len(args) != 2 {
		return nil, false
	}
	var is, known bool
	switch {
	case s.isTypeOfValue(args[0]) && args[1].Kind() == ast.IdentKind:
		is, known = s.hasType(args[1].AsIdent())
	case s.isValue(args[0]) && isNull(args[1]), s.isValue(args[1]) && isNull(args[0]):
		is, known = false, s.shape != kubeschema.Unknown
	}
	if !known {
		return nil, false
	}
	if fn == operators.NotEquals {
		is = !is
	}
	return s.b.Bool(is), true
}

func (s *specializer) isValue(e ast.Expr) bool {
	return e.Kind() == ast.IdentKind && e.AsIdent() == s.v
}

func (s *specializer) isTypeOfValue(e ast.Expr) bool {
	if e.Kind() != ast.CallKind {
		return false
	}
	c := e.AsCall()
	return c.FunctionName() == "type" && !c.IsMemberFunction() && len(c.Args()) == 1 && s.isValue(c.Args()[0])
}

// hasType says whether a value of the shape has the CEL type named t;
// known is false when the shape does not fix the type.
func (s *specializer) hasType(t string) (is, known bool) {
	shapes, ok := typeNames[t]
	if !ok {
		return false, false
	}
	switch s.shape {
	case kubeschema.Unknown, kubeschema.Number:
		return false, false
	case kubeschema.IntOrString:
		if t == "int" || t == "string" {
			return false, false
		}
		return false, true
	}
	for _, sh := range shapes {
		if sh == s.shape {
			return true, true
		}
	}
	return false, true
}

func isNull(e ast.Expr) bool {
	return e.Kind() == ast.LiteralKind && e.AsLiteral() == types.NullValue
}

// intPattern is a scalar pattern on an integer written as a person
// writes it (x > 0, x >= 8000 && x <= 9000, x != 0), checked against the
// exact predicate pred on probe integers; "" when the pattern is not a
// plain comparison of integers, or the check fails.
func intPattern(p any, pred string) string {
	var cand string
	switch v := p.(type) {
	case float64:
		if v != float64(int64(v)) {
			return ""
		}
		cand = "x == " + strconv.FormatInt(int64(v), 10)
	case int64:
		cand = "x == " + strconv.FormatInt(v, 10)
	case int:
		cand = "x == " + strconv.Itoa(v)
	case string:
		var alts []string
		for _, alt := range strings.Split(v, "|") {
			var terms []string
			for _, term := range strings.Split(alt, "&") {
				c := intTerm(strings.TrimSpace(term))
				if c == "" {
					return ""
				}
				terms = append(terms, c)
			}
			alts = append(alts, strings.Join(terms, " && "))
		}
		if len(alts) > 1 {
			for i, a := range alts {
				if strings.Contains(a, "&&") {
					alts[i] = "(" + a + ")"
				}
			}
		}
		cand = strings.Join(alts, " || ")
	default:
		return ""
	}
	if agree(pred, cand, intProbes(p)) != nil {
		return ""
	}
	return cand
}

var (
	// A whole number may be written with a zero fraction: a $( )
	// reference with an operator writes the number it names as Go's %f
	// (">=10.000000").
	intComparison = regexp.MustCompile(`^(>=|<=|>|<|!)?(-?\d+)(?:\.0+)?$`)
	intRangeTerm  = regexp.MustCompile(`^(-?\d+)(!?-)(-?\d+)$`)
)

// intTerm is one comparison of a numeric pattern.
// intOrStringPattern is the predicate of a whole-number pattern (8080 or
// "8080") on an int-or-string value (a port): an integer equal to it, or
// a string that is a quantity equal to it, as Kyverno compares a number
// and a quantity ("8080e0" is one); checked against the exact predicate
// on integers and strings, or "".
func intOrStringPattern(p any, pred string) string {
	var n int64
	switch v := p.(type) {
	case float64:
		if v != float64(int64(v)) {
			return ""
		}
		n = int64(v)
	case int64:
		n = v
	case int:
		n = int64(v)
	case string:
		parsed, err := strconv.ParseInt(v, 10, 64)
		if err != nil || strconv.FormatInt(parsed, 10) != v {
			return ""
		}
		n = parsed
	default:
		return ""
	}
	num := strconv.FormatInt(n, 10)
	cand := "type(x) == int ? x == " + num + " : isQuantity(x) && quantity(x) == quantity(\"" + num + "\")"
	probes := append(intProbes(p), stringProbes(p, false)...)
	probes = append(probes, num+"e0", "0"+num, "+"+num, " "+num, num+".0", "http", "8.08k", "1k")
	if agree(pred, cand, probes) != nil {
		return ""
	}
	return cand
}

func intTerm(t string) string {
	if m := intComparison.FindStringSubmatch(t); m != nil {
		op := m[1]
		switch op {
		case "":
			op = "=="
		case "!":
			op = "!="
		}
		return "x " + op + " " + m[2]
	}
	if m := intRangeTerm.FindStringSubmatch(t); m != nil {
		if m[2] == "!-" {
			return "(x < " + m[1] + " || x > " + m[3] + ")"
		}
		return "x >= " + m[1] + " && x <= " + m[3]
	}
	return ""
}
