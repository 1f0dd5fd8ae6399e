package celbuild

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrint(t *testing.T) {
	b := New()
	c := b.Ident("c")
	sc := b.Select(c, "securityContext")
	pred := b.Or(b.Not(b.Has(c, "securityContext")), b.Not(b.Has(sc, "privileged")), b.Eq(b.Select(sc, "privileged"), b.Bool(false)))
	e := b.All(b.Select(b.Select(b.Ident("object"), "spec"), "containers"), "c", pred)
	assert.Equal(t, `object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || c.securityContext.privileged == false)`, b.MustPrint(e))

	labels := b.Select(b.Select(b.Ident("object"), "metadata"), "labels")
	assert.Equal(t, `"app.kubernetes.io/name" in object.metadata.labels && object.metadata.labels["app.kubernetes.io/name"] != ""`,
		b.MustPrint(b.And(b.Has(labels, "app.kubernetes.io/name"), b.Not(b.Eq(b.Select(labels, "app.kubernetes.io/name"), b.String(""))))))
	assert.Equal(t, `[1, 2].transformList(i, x, x > 1, string(i))[0]`, b.MustPrint(b.Index(b.TransformList(b.List(b.Int(1), b.Int(2)), "i", "x", b.Compare(">", b.Ident("x"), b.Int(1)), b.Call("string", b.Ident("i"))), b.Int(0))))
	assert.Equal(t, "true", b.MustPrint(b.And(b.Bool(true), b.Or(b.Bool(false), b.Bool(true)))))
	assert.Equal(t, `object.spec.?hostNetwork.orValue(false) == false`, b.MustPrint(b.Eq(b.OrValue(b.OptionalSelect(b.Select(b.Ident("object"), "spec"), "hostNetwork"), b.Bool(false)), b.Bool(false))))
}

func TestParseAdopts(t *testing.T) {
	b := New()
	e, err := b.Parse(`request.operation == 'UPDATE' && object.spec.containers.all(c, c.image != "") && [x, 2].exists(y, y > 0)`)
	assert.NoError(t, err)
	assert.Equal(t, `request.operation == "UPDATE" && object.spec.containers.all(c, c.image != "") && [x, 2].exists(y, y > 0)`, b.MustPrint(b.And(e, b.Bool(true))))
	assert.True(t, b.Same(b.Ident("a"), b.Ident("a")))
}

// A macro over a list of one literal is its body with the literal (folded
// where it is constant); a filter whose size is compared with 0 is an
// exists() only when its predicate never fails (TotalFilter).
func TestMacrosOverOneLiteralAndEmptiness(t *testing.T) {
	b := New()
	e, err := b.Parse(`d == "ALL" || ["ALL"].exists(v, v.matches("^" + d + "$")) || [1].all(x, x > 0)`)
	require.NoError(t, err)
	assert.Equal(t, `true`, b.MustPrint(e))
	e, err = b.Parse(`d == "ALL" || ["ALL"].exists(v, v.matches("^" + d + "$"))`)
	require.NoError(t, err)
	assert.Equal(t, `d == "ALL" || "ALL".matches("^" + d + "$")`, b.MustPrint(e))
	l := b.Select(b.Ident("object"), "items")
	pred := b.Compare(">", b.Ident("i"), b.Int(1))
	assert.Equal(t, `object.items.exists(i, i > 1)`, b.MustPrint(b.Compare(">", b.Size(b.TotalFilter(l, "i", pred)), b.Int(0))))
	assert.Equal(t, `!object.items.exists(i, i > 1)`, b.MustPrint(b.Eq(b.Size(b.TotalFilter(l, "i", pred)), b.Int(0))))
	assert.Equal(t, `object.items.filter(i, i > 1).size() > 0`, b.MustPrint(b.Compare(">", b.Size(b.Filter(l, "i", pred)), b.Int(0))))
	assert.Equal(t, `has(a.b) && a.b.c && has(a.b.d)`, b.MustPrint(b.And(b.And(b.Has(b.Ident("a"), "b"), b.Select(b.Select(b.Ident("a"), "b"), "c")), b.Has(b.Ident("a"), "b"), b.Has(b.Select(b.Ident("a"), "b"), "d"))))
}

// A has() inside a macro's argument is a macro too: the outer macro's
// call refers to it by ID, so adopting and substituting keep it printable.
func TestParseAdoptsHasInsideMacros(t *testing.T) {
	b := New()
	e, err := b.Parse(`request.operation == "UPDATE" && !(has(request.userInfo.groups) && "admins" in request.userInfo.groups) && object.spec.containers.all(c, has(c.image))`)
	assert.NoError(t, err)
	const want = `request.operation == "UPDATE" && !(has(request.userInfo.groups) && "admins" in request.userInfo.groups) && object.spec.containers.all(c, has(c.image))`
	assert.Equal(t, want, b.MustPrint(e))
	l := b.Exists(b.Ident("xs"), "x", b.And(e, b.Has(b.Ident("x"), "f")))
	assert.Equal(t, "xs.exists(x, "+want+" && has(x.f))", b.MustPrint(b.Substitute(l, "object", b.Ident("object"))))
}

// Comparisons of one value with string literals under || (==) or && (!=)
// are one membership test where the first of them was; other operands keep
// their places, and a value compared with one literal stays a comparison.
func TestComparisonsWithLiteralsBecomeMembership(t *testing.T) {
	b := New()
	x := func() Expr { return b.Select(b.Ident("c"), "type") }
	y := b.Select(b.Ident("c"), "kind")
	assert.Equal(t, `!has(c.type) || c.type in ["a", "b", "c"] || c.kind == "a"`,
		b.MustPrint(b.Or(b.Not(b.Has(b.Ident("c"), "type")), b.Eq(x(), b.String("a")), b.Eq(y, b.String("a")), b.Eq(b.String("b"), x()), b.In(x(), b.List(b.String("c"), b.String("a"))))))
	assert.Equal(t, `has(c.type) && !(c.type in ["a", "b"])`,
		b.MustPrint(b.And(b.Has(b.Ident("c"), "type"), b.Ne(x(), b.String("a")), b.Ne(x(), b.String("b")))))
	assert.Equal(t, `c.type == "a" || c.type == 1`, b.MustPrint(b.Or(b.Eq(x(), b.String("a")), b.Eq(x(), b.Int(1)))))
	assert.Equal(t, `c.type == "a"`, b.MustPrint(b.Or(b.Eq(x(), b.String("a")), b.Eq(x(), b.String("a")))))
}

// With AssumeTypedPresence, the operands of && after a presence test take
// it as true in their own &&, || and !, not inside comprehensions; without
// it (a presence test that may fail), nothing is rewritten.
func TestPresenceTestsHoldInLaterOperands(t *testing.T) {
	build := func(b *Builder) Expr {
		v := b.Ident("v")
		dir := b.Select(v, "emptyDir")
		inner := b.Exists(b.Ident("xs"), "v", b.Has(b.Ident("v"), "emptyDir"))
		return b.And(b.Has(v, "emptyDir"), b.Not(b.And(b.Has(v, "emptyDir"), b.Has(dir, "sizeLimit"))), b.Or(b.Not(b.Has(v, "emptyDir")), inner))
	}
	b := New()
	b.AssumeTypedPresence()
	assert.Equal(t, `has(v.emptyDir) && !has(v.emptyDir.sizeLimit) && xs.exists(v, has(v.emptyDir))`, b.MustPrint(build(b)))
	plain := New()
	assert.Equal(t, `has(v.emptyDir) && !(has(v.emptyDir) && has(v.emptyDir.sizeLimit)) && (!has(v.emptyDir) || xs.exists(v, has(v.emptyDir)))`, plain.MustPrint(build(plain)))
}

// A count of conditions compared with 0 or 1 is whether one holds.
func TestCountComparedWithZero(t *testing.T) {
	b := New()
	sel := b.Select(b.Ident("object"), "podSelector")
	n := func() Expr { return b.Count(b.Has(sel, "matchLabels"), b.Has(sel, "matchExpressions")) }
	assert.Equal(t, `(has(object.podSelector.matchLabels) ? 1 : 0) + (has(object.podSelector.matchExpressions) ? 1 : 0)`, b.MustPrint(n()))
	assert.Equal(t, `!(has(object.podSelector.matchLabels) || has(object.podSelector.matchExpressions))`, b.MustPrint(b.Eq(n(), b.Int(0))))
	assert.Equal(t, `has(object.podSelector.matchLabels) || has(object.podSelector.matchExpressions)`, b.MustPrint(b.Compare(">", n(), b.Int(0))))
	assert.Equal(t, `(has(object.podSelector.matchLabels) ? 1 : 0) + (has(object.podSelector.matchExpressions) ? 1 : 0) > 1`, b.MustPrint(b.Compare(">", n(), b.Int(1))))
}

// With AssumeTypedPresence, a run of nested presence tests prints as one
// optional chain, under && and, negated, under ||; a lone test stays.
func TestPresenceTestsPrintAsOptionalChains(t *testing.T) {
	b := New()
	b.AssumeTypedPresence()
	c := b.Ident("c")
	sc := b.Select(c, "securityContext")
	se := b.Select(sc, "seLinuxOptions")
	typ := b.Select(se, "type")
	ok := b.Or(b.Not(b.Has(c, "securityContext")), b.Not(b.Has(sc, "seLinuxOptions")), b.Not(b.Has(se, "type")), b.Eq(typ, b.String("container_t")))
	assert.Equal(t, `!c.?securityContext.?seLinuxOptions.?type.hasValue() || c.securityContext.seLinuxOptions.type == "container_t"`, b.MustPrint(ok))
	assert.Equal(t, `c.?securityContext.?seLinuxOptions.hasValue() && has(c.name)`, b.MustPrint(b.And(b.Has(c, "securityContext"), b.Has(sc, "seLinuxOptions"), b.Has(c, "name"))))
	assert.Equal(t, `has(c.securityContext) && has(c.name)`, b.MustPrint(b.And(b.Has(c, "securityContext"), b.Has(c, "name"))))
	inList := b.Exists(b.Ident("cs"), "c", b.And(b.Has(c, "securityContext"), b.Has(sc, "seLinuxOptions")))
	assert.Equal(t, `cs.exists(c, c.?securityContext.?seLinuxOptions.hasValue())`, b.MustPrint(inList))
	plain := New()
	assert.Equal(t, `has(c.securityContext) && has(c.securityContext.seLinuxOptions)`, plain.MustPrint(plain.And(plain.Has(c, "securityContext"), plain.Has(plain.Select(c, "securityContext"), "seLinuxOptions"))))
}

// A ternary of two strings that start alike writes the start once: the
// operands they share, then the shared text of two literals up to a
// separator; numbers and lists are left as they are.
func TestTernaryWritesASharedStartOnce(t *testing.T) {
	b := New()
	c := b.Ident("c")
	i := b.Call("string", b.Ident("i"))
	path := func(tail string) Expr { return b.Add(b.Add(b.String("/spec/containers/"), i), b.String(tail)) }
	assert.Equal(t, `"/spec/containers/" + string(i) + "/securityContext/" + (c ? "capabilities/" : "")`,
		b.MustPrint(b.Ternary(c, path("/securityContext/capabilities/"), path("/securityContext/"))))
	assert.Equal(t, `"/spec/" + (c ? "hostIPC/" : "hostPID/")`, b.MustPrint(b.Ternary(c, b.String("/spec/hostIPC/"), b.String("/spec/hostPID/"))))
	assert.Equal(t, `c ? "hostIPC" : "hostPID"`, b.MustPrint(b.Ternary(c, b.String("hostIPC"), b.String("hostPID"))))
	n := b.Ident("n")
	assert.Equal(t, `c ? (n + 1) : (n + 2)`, b.MustPrint(b.Ternary(c, b.Add(n, b.Int(1)), b.Add(n, b.Int(2)))))
	got, err := evalWith(b.MustPrint(b.Ternary(c, path("/a/b/"), path("/a/"))), map[string]any{"c": false, "i": 3})
	require.NoError(t, err)
	assert.Equal(t, "/spec/containers/3/a/", got)
}

func evalWith(src string, vars map[string]any) (any, error) {
	env, err := cel.NewEnv(cel.Variable("c", cel.BoolType), cel.Variable("i", cel.IntType))
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		return nil, err
	}
	return out.Value(), nil
}

// Text next to text is one literal, either way round: "a" + ("b" + z) is
// "ab" + z and (z + "a") + "b" is z + "ab"; lists are never joined.
func TestAdjacentTextIsOneLiteral(t *testing.T) {
	b := New()
	z := b.Ident("z")
	assert.Equal(t, `"ab" + z`, b.MustPrint(b.Add(b.String("a"), b.Add(b.String("b"), z))))
	assert.Equal(t, `z + "ab"`, b.MustPrint(b.Add(b.Add(z, b.String("a")), b.String("b"))))
	assert.Equal(t, `"x" + z + "ab"`, b.MustPrint(b.Add(b.Add(b.Add(b.String("x"), z), b.String("a")), b.String("b"))))
	assert.Equal(t, `z + [1] + [2]`, b.MustPrint(b.Add(b.Add(z, b.List(b.Int(1))), b.List(b.Int(2)))))
}

// The two-variable exists prints as written, survives adoption (a
// substitution of a name it binds leaves its body alone), and evaluates as
// cel-go's own macro does.
func TestExistsIndexed(t *testing.T) {
	b := New()
	pred := b.Ternary(b.Eq(b.Ident("i"), b.Int(0)), b.Compare(">", b.Ident("o"), b.Ident("min")), b.Compare("<", b.Ident("o"), b.Ident("min")))
	e := b.ExistsIndexed(b.List(b.Ident("x"), b.Ident("y")), "i", "o", pred)
	src := b.MustPrint(e)
	assert.Equal(t, `[x, y].exists(i, o, (i == 0) ? (o > min) : (o < min))`, src)
	assert.Equal(t, `[x, y].exists(i, o, (i == 0) ? (o > 3) : (o < 3))`, b.MustPrint(b.Substitute(b.Substitute(e, "o", b.Int(9)), "min", b.Int(3))))

	env, err := cel.NewEnv(ext.TwoVarComprehensions(), cel.Variable("x", cel.IntType), cel.Variable("y", cel.IntType), cel.Variable("min", cel.IntType))
	require.NoError(t, err)
	checked, iss := env.Compile(src)
	require.NoError(t, iss.Err())
	prg, err := env.Program(checked)
	require.NoError(t, err)
	for _, c := range []struct {
		x, y, min int
		want      bool
	}{{5, 9, 3, true}, {1, 9, 3, false}, {1, 2, 3, true}} {
		out, _, err := prg.Eval(map[string]any{"x": c.x, "y": c.y, "min": c.min})
		require.NoError(t, err)
		assert.Equal(t, c.want, out.Value(), "x=%d y=%d min=%d", c.x, c.y, c.min)
	}
}

// SubstituteField replaces a variable's reads, not the other variables'.
func TestSubstituteField(t *testing.T) {
	b := New()
	e, err := b.Parse(`has(variables.resource.spec) && variables.resource.spec.x == variables.other`)
	require.NoError(t, err)
	assert.Equal(t, `has(o.spec) && o.spec.x == variables.other`, b.MustPrint(b.SubstituteField(e, "variables", "resource", b.Ident("o"))))
}

// Quantifiers over one list among the operands of || (exists) or &&
// (all) are one, where the first was; other lists, other variables and
// other quantifiers stay.
func TestQuantifiersOverOneListAreOne(t *testing.T) {
	b := New()
	e, err := b.Parse(`l.exists(c, c.a) || x || l.exists(c, c.b) || m.exists(c, c.a) || l.exists(d, d.a) || l.all(c, c.z)`)
	require.NoError(t, err)
	assert.Equal(t, `l.exists(c, c.a || c.b) || x || m.exists(c, c.a) || l.exists(d, d.a) || l.all(c, c.z)`, b.MustPrint(e))
	e, err = b.Parse(`l.all(c, c.a) && l.all(c, c.b) && l.exists(c, c.z)`)
	require.NoError(t, err)
	assert.Equal(t, `l.all(c, c.a && c.b) && l.exists(c, c.z)`, b.MustPrint(e))
	// A predicate that is itself a chain of the operator.
	e, err = b.Parse(`l.exists(c, c.a) || x || l.exists(c, c.d || c.e) || l.exists(c, c.f && c.g)`)
	require.NoError(t, err)
	assert.Equal(t, `l.exists(c, c.a || c.d || c.e || c.f && c.g) || x`, b.MustPrint(e))

	env, err := cel.NewEnv(cel.Variable("l", cel.ListType(cel.DynType)))
	require.NoError(t, err)
	eval := func(src string, l []any) (any, bool) {
		ast, iss := env.Compile(src)
		require.NoError(t, iss.Err())
		prg, err := env.Program(ast)
		require.NoError(t, err)
		out, _, err := prg.Eval(map[string]any{"l": l})
		if err != nil {
			return nil, false
		}
		return out.Value(), true
	}
	// Alike on true, false and erring elements (a missing field).
	lists := [][]any{{}, {map[string]any{"a": true, "b": false}}, {map[string]any{"b": true}}, {map[string]any{"a": false}}, {map[string]any{"a": false, "b": false}, map[string]any{}}}
	for _, src := range []string{`l.exists(c, c.a) || l.exists(c, c.b)`, `l.all(c, c.a) && l.all(c, c.b)`} {
		p, err := b.Parse(src)
		require.NoError(t, err)
		merged := b.MustPrint(p)
		require.NotEqual(t, src, merged)
		for _, l := range lists {
			want, wantOK := eval(src, l)
			got, gotOK := eval(merged, l)
			assert.Equal(t, wantOK, gotOK, "%s on %v", merged, l)
			assert.Equal(t, want, got, "%s on %v", merged, l)
		}
	}
}
