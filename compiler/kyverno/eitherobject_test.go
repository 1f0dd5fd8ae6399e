package kyverno

import (
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/celbuild"
)

// The loop over both objects decides as the two clauses do, errors
// included: on every pair of objects (a passing, a failing, one whose
// test errs, and null, the old object of a CREATE), CREATE and UPDATE.
func TestEitherObjectDecidesAsTheTwoClauses(t *testing.T) {
	b := celbuild.New()
	test := func(root string) celbuild.Expr {
		e, err := b.Parse(`!(` + root + `.spec.replicas <= 3 && ` + root + `.spec.containers.all(c, c.image != "latest"))`)
		require.NoError(t, err)
		return e
	}
	guard, err := b.Parse(`request.operation == "UPDATE"`)
	require.NoError(t, err)
	once, ok := eitherObjectValid(b, b.Ident("object"), test("object"), test("oldObject"), guard, nil)
	require.True(t, ok)
	onceText := b.MustPrint(once)
	assert.Equal(t, `[object, oldObject].exists(i, o, (i == 0 || request.operation == "UPDATE") && (o.spec.replicas <= 3 && o.spec.containers.all(c, c.image != "latest")) == (i == 0))`, onceText)
	twice := b.MustPrint(b.Or(b.Not(test("object")), b.And(guard, test("oldObject"))))

	pod := func(replicas int, image string) map[string]any {
		return map[string]any{"spec": map[string]any{"replicas": replicas, "containers": []any{map[string]any{"image": image}}}}
	}
	objects := []any{pod(1, "nginx"), pod(5, "nginx"), pod(1, "latest"), map[string]any{"spec": map[string]any{"replicas": 1}}, nil}
	var inputs []map[string]any
	for _, op := range []string{"CREATE", "UPDATE"} {
		for _, obj := range objects[:4] {
			for _, old := range objects {
				if op == "CREATE" && old != nil || op == "UPDATE" && old == nil {
					continue
				}
				inputs = append(inputs, map[string]any{"object": obj, "oldObject": old, "request": map[string]any{"operation": op}, "variables": map[string]any{}})
			}
		}
	}
	compared := decideAlike(t, onceText, twice, inputs)
	assert.Equal(t, 4+4*4, compared)
}

// The loop is written only where the old object's test is the new one's
// read from the old object, and where it is shorter.
func TestEitherObjectOnlyWhereTheTestsAgree(t *testing.T) {
	b := celbuild.New()
	parse := func(src string) celbuild.Expr {
		e, err := b.Parse(src)
		require.NoError(t, err)
		return e
	}
	guard := parse(`request.operation == "UPDATE"`)
	long := `.spec.containers.exists(c, c.image.startsWith("registry.example.com/") && c.image.endsWith(":latest"))`

	_, ok := eitherObjectValid(b, b.Ident("object"), parse("object"+long), parse("oldObject"+long), guard, nil)
	assert.True(t, ok)
	// A value read from the new object in the old object's pass.
	_, ok = eitherObjectValid(b, b.Ident("object"), parse("object"+long+" && object.metadata.name != ''"), parse("oldObject"+long+" && object.metadata.name != ''"), guard, nil)
	assert.False(t, ok)
	// The loop's names are taken.
	_, ok = eitherObjectValid(b, b.Ident("object"), parse("object"+long+" && object.spec.containers.exists(o, o.name == 'x')"), parse("oldObject"+long+" && oldObject.spec.containers.exists(o, o.name == 'x')"), guard, nil)
	assert.False(t, ok)
	// One field: two clauses read better.
	_, ok = eitherObjectValid(b, b.Ident("object"), parse("object.spec.x == 1"), parse("oldObject.spec.x == 1"), guard, nil)
	assert.False(t, ok)
	// The new object's test holds on operations but DELETE.
	once, ok := eitherObjectValid(b, b.Ident("object"), parse(`request.operation != "DELETE" && object`+long), parse("oldObject"+long), guard, nil)
	require.True(t, ok)
	assert.Contains(t, b.MustPrint(once), `(request.operation == "DELETE" || !o.spec.containers.exists(c,`)
	// Kyverno's request.object of a policy that matches DELETE.
	once, ok = eitherObjectValid(b, parse("variables.resource"), parse("variables.resource"+long), parse("oldObject"+long), guard, nil)
	require.True(t, ok)
	assert.Contains(t, b.MustPrint(once), `[variables.resource, oldObject].exists(i, o, `)
}

// The same for a deny rule of a policy that also matches DELETE: Kyverno's
// request.object is variables.resource (on DELETE the old object), and the
// test holds on operations but DELETE.
func TestEitherObjectOfAResourceDecidesAsTheTwoClauses(t *testing.T) {
	b := celbuild.New()
	parse := func(src string) celbuild.Expr {
		e, err := b.Parse(src)
		require.NoError(t, err)
		return e
	}
	test := `.spec.containers.exists(c, c.image.startsWith("docker.io/") || c.image.endsWith(":latest"))`
	bad, before := parse(`request.operation != "DELETE" && variables.resource`+test), parse("oldObject"+test)
	guard := parse(`request.operation == "UPDATE"`)
	once, ok := eitherObjectValid(b, parse("variables.resource"), bad, before, guard, nil)
	require.True(t, ok)
	onceText, twice := b.MustPrint(once), b.MustPrint(b.Or(b.Not(bad), b.And(guard, before)))
	require.Contains(t, onceText, "[variables.resource, oldObject].exists(i, o, ")

	pod := func(image string) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": image}}}}
	}
	objects := []any{pod("registry.example.com/app:1"), pod("docker.io/app:1"), map[string]any{"spec": map[string]any{}}, nil}
	var inputs []map[string]any
	for _, op := range []string{"CREATE", "UPDATE", "DELETE"} {
		for _, obj := range objects {
			for _, old := range objects {
				if (op == "CREATE") != (old == nil) || (op == "DELETE") != (obj == nil) {
					continue
				}
				resource := obj
				if op == "DELETE" {
					resource = old
				}
				inputs = append(inputs, map[string]any{"object": obj, "oldObject": old, "request": map[string]any{"operation": op}, "variables": map[string]any{"resource": resource}})
			}
		}
	}
	compared := decideAlike(t, onceText, twice, inputs)
	assert.Equal(t, 3+9+3, compared)
}

// decideAlike evaluates a and b with cel-go on each input (object,
// oldObject, request and variables) and requires the same value or an
// error on both; it returns how many inputs it compared.
func decideAlike(t *testing.T, a, b string, inputs []map[string]any) int {
	t.Helper()
	env, err := cel.NewEnv(ext.TwoVarComprehensions(), cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.DynType))
	require.NoError(t, err)
	program := func(src string) cel.Program {
		ast, iss := env.Compile(src)
		require.NoError(t, iss.Err(), src)
		p, err := env.Program(ast)
		require.NoError(t, err)
		return p
	}
	pa, pb := program(a), program(b)
	for _, in := range inputs {
		x, _, errx := pa.Eval(in)
		y, _, erry := pb.Eval(in)
		require.Equal(t, erry != nil, errx != nil, "%v: %v / %v", in, errx, erry)
		if errx == nil {
			assert.Equal(t, y.Value(), x.Value(), "%v", in)
		}
	}
	return len(inputs)
}
