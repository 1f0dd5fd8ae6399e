package celbuild

import (
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apiserver/pkg/cel/environment"
)

// A call of a pure function whose arguments are all literals (or such
// calls) is evaluated when built: duration("0s") > duration("0ns") is
// true. Only scalar results become literals; a call that fails is left to
// fail when evaluated, as it would have.

// pure are the functions folded.
var pure = map[string]bool{
	operators.Equals: true, operators.NotEquals: true, operators.Less: true, operators.LessEquals: true,
	operators.Greater: true, operators.GreaterEquals: true, operators.Add: true, operators.Subtract: true,
	operators.LogicalNot: true, operators.Negate: true, operators.In: true,
	"size": true, "contains": true, "startsWith": true, "endsWith": true, "matches": true,
	"duration": true, "quantity": true, "isQuantity": true, "compareTo": true, "string": true,
	"int": true, "double": true, "lowerAscii": true, "upperAscii": true, "isSemver": true, "semver": true,
}

var foldEnv = sync.OnceValues(func() (*cel.Env, error) {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
})

// constantTree says e is a literal or a pure call of constant trees.
func constantTree(e Expr) bool {
	switch e.Kind() {
	case ast.LiteralKind:
		return true
	case ast.ListKind:
		// A list literal of constants ("CREATE" in ["CREATE", "UPDATE"]).
		if len(e.AsList().OptionalIndices()) > 0 {
			return false
		}
		for _, el := range e.AsList().Elements() {
			if !constantTree(el) {
				return false
			}
		}
		return true
	case ast.CallKind:
		c := e.AsCall()
		if !pure[c.FunctionName()] {
			return false
		}
		if c.IsMemberFunction() && !constantTree(c.Target()) {
			return false
		}
		for _, a := range c.Args() {
			if !constantTree(a) {
				return false
			}
		}
		return true
	}
	return false
}

// fold is e evaluated to a literal when it is a constant call with a
// scalar value.
func (b *Builder) fold(e Expr) Expr {
	if e.Kind() != ast.CallKind || !constantTree(e) {
		return e
	}
	src, err := b.Print(e)
	if err != nil {
		return e
	}
	env, err := foldEnv()
	if err != nil {
		return e
	}
	a, iss := env.Compile(src)
	if iss.Err() != nil {
		return e
	}
	prg, err := env.Program(a)
	if err != nil {
		return e
	}
	out, _, err := prg.Eval(cel.NoVars())
	if err != nil {
		return e
	}
	switch out.Type().TypeName() {
	case "bool", "int", "uint", "double", "string":
		return b.literal(out.(ref.Val))
	}
	return e
}
