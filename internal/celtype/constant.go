package celtype

import (
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apiserver/pkg/cel/environment"
)

// constEnv evaluates constant calls in the API server's base environment.
var constEnv = sync.OnceValues(func() (*cel.Env, error) {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
})

// evalConstant evaluates a CEL expression of literals; ok is false when it
// does not evaluate to a scalar (an error is left for run time, where it
// happens as it did).
func evalConstant(src string) (ref.Val, bool) {
	env, err := constEnv()
	if err != nil {
		return nil, false
	}
	a, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, false
	}
	prg, err := env.Program(a)
	if err != nil {
		return nil, false
	}
	out, _, err := prg.Eval(cel.NoVars())
	if err != nil {
		return nil, false
	}
	switch out.Type().TypeName() {
	case "bool", "int", "uint", "double", "string", "null_type":
		return out, true
	}
	return nil, false
}
