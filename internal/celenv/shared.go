package celenv

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/mutation"

	kyvernocompiler "github.com/kyverno/kyverno/pkg/cel/compiler"

	"github.com/admitc/admitc/ir"
)

// The API server builds, for every policy, the base environment extended with
// a fresh "variables" object type, then eight environments over it (one per
// OptionalVariableDeclarations). Those declarations are identical for every
// policy except the fields of "variables", so admitc builds the eight once per
// compatibility version and extends one of them with "variables" only, once
// per distinct set of variable names and types. The declarations, libraries
// and cost options are exactly the API server's; only the order in which the
// layers are stacked differs, and the type names of the layers are disjoint.

// optionEnvs are the base environment plus the admission variables for each
// set of optional declarations, as plugincel's createEnvForOpts builds them.
type optionEnvs map[plugincel.OptionalVariableDeclarations]*environment.EnvSet

// Env names a family of environments: the compatibility version of an API
// server (or of Kyverno's compiler) and the CEL dialect. Namespace is set
// for namespaced Kyverno policies only: their resource library reads their
// own namespace.
type Env struct {
	Version   *version.Version
	Dialect   ir.CELDialect
	Namespace string
}

// KubernetesEnv is the API server's environment at version v.
func KubernetesEnv(v *version.Version) Env { return Env{Version: v} }

// PolicyEnv is the environment p's expressions are evaluated in by the
// engine p was written for, at the runtime's version.
func PolicyEnv(p *ir.Policy) Env {
	e := Env{Version: RuntimeVersion(), Dialect: p.CEL}
	if p.CEL == ir.CELKyverno {
		e.Namespace = p.CELNamespace
	}
	return e
}

func (e Env) key() string {
	return e.Version.String() + "\x00" + string(e.Dialect) + "\x00" + e.Namespace
}

// varEnvKey names one shared environment: the family, optional
// declarations and the "variables" fields it declares.
type varEnvKey struct {
	env       string
	opts      plugincel.OptionalVariableDeclarations
	signature string
}

type onceEnv struct {
	once sync.Once
	env  *environment.EnvSet
	err  error
}

var shared = struct {
	mu      sync.Mutex
	options map[string]*onceOptions
	vars    map[varEnvKey]*onceEnv
}{options: map[string]*onceOptions{}, vars: map[varEnvKey]*onceEnv{}}

type onceOptions struct {
	once sync.Once
	envs optionEnvs
	err  error
}

// sharedOptionEnvs returns the option environments of e, building them once.
func sharedOptionEnvs(e Env) (optionEnvs, error) {
	shared.mu.Lock()
	o := shared.options[e.key()]
	if o == nil {
		o = &onceOptions{}
		shared.options[e.key()] = o
	}
	shared.mu.Unlock()
	o.once.Do(func() { o.envs, o.err = buildEnvs(e) })
	return o.envs, o.err
}

// buildEnvs builds the option environments of a family.
func buildEnvs(e Env) (optionEnvs, error) {
	switch e.Dialect {
	case ir.CELKubernetes:
		return buildOptionEnvs(environment.MustBaseEnvSet(e.Version))
	case ir.CELKyvernoRule:
		base, err := environment.MustBaseEnvSet(e.Version).Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions:        kyvernocompiler.OrValueCompatEnvOptions(),
		})
		if err != nil {
			return nil, fmt.Errorf("environment misconfigured: %w", err)
		}
		return buildOptionEnvs(base)
	case ir.CELKyverno:
		return buildKyvernoEnvs(e.Namespace)
	}
	return nil, fmt.Errorf("unknown CEL dialect %q", e.Dialect)
}

func buildOptionEnvs(base *environment.EnvSet) (optionEnvs, error) {
	requestType, namespaceType := plugincel.BuildRequestType(), plugincel.BuildNamespaceType()
	envs := optionEnvs{}
	for _, params := range []bool{false, true} {
		for _, authz := range []bool{false, true} {
			for _, patchTypes := range []bool{false, true} {
				o := plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: authz, HasPatchTypes: patchTypes}
				env, err := envForOpts(base, namespaceType, requestType, o)
				if err != nil {
					return nil, err
				}
				envs[o] = env
			}
		}
	}
	return envs, nil
}

// envForOpts is plugincel's createEnvForOpts (k8s.io/apiserver v0.36.3).
func envForOpts(base *environment.EnvSet, namespaceType, requestType *apiservercel.DeclType, opts plugincel.OptionalVariableDeclarations) (*environment.EnvSet, error) {
	envOpts := []cel.EnvOption{
		cel.Variable(plugincel.ObjectVarName, cel.DynType),
		cel.Variable(plugincel.OldObjectVarName, cel.DynType),
		cel.Variable(plugincel.NamespaceVarName, namespaceType.CelType()),
		cel.Variable(plugincel.RequestVarName, requestType.CelType()),
	}
	if opts.HasParams {
		envOpts = append(envOpts, cel.Variable(plugincel.ParamsVarName, cel.DynType))
	}
	if opts.HasAuthorizer {
		envOpts = append(envOpts,
			cel.Variable(plugincel.AuthorizerVarName, library.AuthorizerType),
			cel.Variable(plugincel.RequestResourceAuthorizerVarName, library.ResourceCheckType))
	}
	extended, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        envOpts,
		DeclTypes:         []*apiservercel.DeclType{namespaceType, requestType},
	}, environment.StrictCostOpt)
	if err != nil {
		return nil, fmt.Errorf("environment misconfigured: %w", err)
	}
	if !opts.HasPatchTypes {
		return extended, nil
	}
	extended, err = extended.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			common.ResolverEnvOption(&mutation.DynamicTypeResolver{}),
			environment.UnversionedLib(library.JSONPatch),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("environment misconfigured: %w", err)
	}
	return extended, nil
}

// variablesType is the type of "variables" with the given fields.
type variablesType map[string]*apiservercel.DeclType

// signature is a stable text naming the fields and their types.
func (f variablesType) signature() string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s\x00%s\x00", n, f[n].CelType())
	}
	return b.String()
}

// sharedVariablesEnv returns the environment of family e and opts whose
// "variables" has exactly fields, and the object type of "variables".
func sharedVariablesEnv(e Env, opts plugincel.OptionalVariableDeclarations, fields variablesType) (*environment.EnvSet, error) {
	key := varEnvKey{env: e.key(), opts: opts, signature: fields.signature()}
	shared.mu.Lock()
	o := shared.vars[key]
	if o == nil {
		o = &onceEnv{}
		shared.vars[key] = o
	}
	shared.mu.Unlock()
	o.once.Do(func() { o.env, o.err = buildVariablesEnv(e, opts, fields) })
	return o.env, o.err
}

// buildVariablesEnv declares "variables" as NewCompositedCompiler does: the
// object type is registered empty and its fields are added afterwards, as
// CompileAndStoreVariable adds them.
func buildVariablesEnv(e Env, opts plugincel.OptionalVariableDeclarations, fields variablesType) (*environment.EnvSet, error) {
	envs, err := sharedOptionEnvs(e)
	if err != nil {
		return nil, err
	}
	mapType := apiservercel.NewObjectType(variablesTypeName, map[string]*apiservercel.DeclField{})
	env, err := envs[opts].Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(plugincel.VariableVarName, mapType.CelType())},
		DeclTypes:         []*apiservercel.DeclType{mapType},
	})
	if err != nil {
		return nil, err
	}
	for name, t := range fields {
		mapType.Fields[name] = apiservercel.NewDeclField(name, t, true, nil, nil)
	}
	return env, nil
}

const variablesTypeName = "kubernetes.variables"

// declType is plugincel's convertCelTypeToDeclType (k8s.io/apiserver v0.36.3).
func declType(t *cel.Type) *apiservercel.DeclType {
	if t == nil {
		return apiservercel.DynType
	}
	switch t {
	case cel.AnyType:
		return apiservercel.AnyType
	case cel.BoolType:
		return apiservercel.BoolType
	case cel.BytesType:
		return apiservercel.BytesType
	case cel.DoubleType:
		return apiservercel.DoubleType
	case cel.DurationType:
		return apiservercel.DurationType
	case cel.IntType:
		return apiservercel.IntType
	case cel.NullType:
		return apiservercel.NullType
	case cel.StringType:
		return apiservercel.StringType
	case cel.TimestampType:
		return apiservercel.TimestampType
	case cel.UintType:
		return apiservercel.UintType
	}
	if t.HasTrait(traits.ContainerType) && t.HasTrait(traits.IndexerType) {
		switch p := t.Parameters(); len(p) {
		case 1:
			return apiservercel.NewListType(declType(p[0]), -1)
		case 2:
			return apiservercel.NewMapType(declType(p[0]), declType(p[1]), -1)
		}
	}
	return apiservercel.DynType
}
