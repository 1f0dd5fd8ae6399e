package celenv

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	kyvernocompiler "github.com/kyverno/kyverno/pkg/cel/compiler"
	"github.com/kyverno/sdk/extensions/cel/libs/globalcontext"
	"github.com/kyverno/sdk/extensions/cel/libs/gzip"
	"github.com/kyverno/sdk/extensions/cel/libs/hash"
	"github.com/kyverno/sdk/extensions/cel/libs/http"
	"github.com/kyverno/sdk/extensions/cel/libs/image"
	"github.com/kyverno/sdk/extensions/cel/libs/imagedata"
	"github.com/kyverno/sdk/extensions/cel/libs/json"
	"github.com/kyverno/sdk/extensions/cel/libs/math"
	"github.com/kyverno/sdk/extensions/cel/libs/random"
	"github.com/kyverno/sdk/extensions/cel/libs/resource"
	"github.com/kyverno/sdk/extensions/cel/libs/time"
	"github.com/kyverno/sdk/extensions/cel/libs/transform"
	"github.com/kyverno/sdk/extensions/cel/libs/user"
	"github.com/kyverno/sdk/extensions/cel/libs/x509"
	"github.com/kyverno/sdk/extensions/cel/libs/yaml"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/mutation"

	"github.com/admitc/admitc/internal/celenv/libs"
	"github.com/admitc/admitc/ir"
)

// Kyverno's CEL policies (ValidatingPolicy, MutatingPolicy) are compiled
// in an environment of Kyverno's own (v1.19.1 pkg/cel/policies/vpol and
// mpol compiler.go, createBaseVpolEnv and newExtendedEnv): the API server's
// base environment set at Kyverno's compiler version, every expression
// compiled as a stored one, Kyverno's default options (among them the
// orValue compatibility macro and cel-go's regex extension, which the API
// server lacks) and Kyverno's libraries from github.com/kyverno/sdk. The
// declarations are Kyverno's: object and oldObject (dyn), request (with
// object and oldObject), namespaceObject, variables and exceptions; no
// params and no authorizer. Libraries that read the cluster are bound here
// to a stand-in that fails, and at evaluation to the request's cluster
// state (KyvernoContexts).

// Kyverno's compiler versions: the base environment set of a
// ValidatingPolicy is built at 1.0, a MutatingPolicy's at 2.0.
var (
	kyvernoValidatingVersion = version.MajorMinor(1, 0)
	kyvernoMutatingVersion   = version.MajorMinor(2, 0)
)

// Names of the variables Kyverno's libraries read their context from.
const (
	ResourceVar      = kyvernocompiler.ResourceKey
	GlobalContextVar = kyvernocompiler.GlobalContextKey
	HTTPVar          = kyvernocompiler.HttpKey
	ImageDataVar     = kyvernocompiler.ImageDataKey
	ExceptionsVar    = kyvernocompiler.ExceptionsKey
)

// buildKyvernoEnvs are the option environments of Kyverno's dialect: one
// for validating expressions and one, with the patch types and the JSON
// Patch library, for mutations. Kyverno declares neither params nor an
// authorizer, so those options make no difference.
func buildKyvernoEnvs(namespace string) (optionEnvs, error) {
	validating, err := kyvernoEnvSet(namespace, false)
	if err != nil {
		return nil, err
	}
	mutating, err := kyvernoEnvSet(namespace, true)
	if err != nil {
		return nil, err
	}
	envs := optionEnvs{}
	for _, params := range []bool{false, true} {
		for _, authz := range []bool{false, true} {
			envs[plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: authz}] = validating
			envs[plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: authz, HasPatchTypes: true}] = mutating
		}
	}
	return envs, nil
}

// kyvernoEnvSet is Kyverno's environment for a policy of namespace ("" for
// a cluster-wide policy), without "variables", which the composition adds.
func kyvernoEnvSet(namespace string, mutating bool) (*environment.EnvSet, error) {
	v := kyvernoValidatingVersion
	if mutating {
		v = kyvernoMutatingVersion
	}
	base := environment.MustBaseEnvSet(v)
	env, err := base.Env(environment.StoredExpressions)
	if err != nil {
		return nil, err
	}
	declOptions, err := apiservercel.NewDeclTypeProvider(kyvernocompiler.NamespaceType, kyvernocompiler.RequestType).EnvOptions(env.CELTypeProvider())
	if err != nil {
		return nil, err
	}
	opts := append(kyvernocompiler.DefaultEnvOptionsWithCompat(),
		cel.Variable(kyvernocompiler.NamespaceObjectKey, kyvernocompiler.NamespaceType.CelType()),
		cel.Variable(kyvernocompiler.ObjectKey, cel.DynType),
		cel.Variable(kyvernocompiler.OldObjectKey, cel.DynType),
		cel.Variable(kyvernocompiler.RequestKey, kyvernocompiler.RequestType.CelType()),
		cel.Types(kyvernocompiler.NamespaceType.CelType()),
		cel.Types(kyvernocompiler.RequestType.CelType()),
	)
	if mutating {
		opts = append(opts, cel.Types(types.NewObjectType("Object")), cel.Types(types.NewObjectType("JSONPatch")))
	}
	opts = append(opts, declOptions...)
	if mutating {
		opts = append(opts, common.ResolverEnvOption(&mutation.DynamicTypeResolver{}))
	}
	extended, err := base.Extend(
		environment.VersionedOptions{IntroducedVersion: v, EnvOptions: opts},
		environment.VersionedOptions{IntroducedVersion: v, EnvOptions: kyvernoLibraries(namespace, mutating)},
	)
	if err != nil {
		return nil, fmt.Errorf("Kyverno's CEL environment misconfigured: %w", err)
	}
	return extended, nil
}

// kyvernoLibraries are Kyverno's libraries, as its compilers install them.
func kyvernoLibraries(namespace string, mutating bool) []cel.EnvOption {
	opts := []cel.EnvOption{
		ext.NativeTypes(reflect.TypeFor[libs.Exception](), ext.ParseStructTags(true)),
		cel.Variable(ExceptionsVar, types.NewObjectType("libs.Exception")),
	}
	if mutating {
		opts = append(opts, environment.UnversionedLib(library.JSONPatch))
	}
	return append(opts,
		globalcontext.Lib(globalcontext.Context{ContextInterface: kyvernocompiler.ConfineGlobalContext(NoCluster{}, namespace)}, globalcontext.Latest()),
		resource.Lib(resource.Context{ContextInterface: NoCluster{}}, namespace, resource.Latest()),
		image.Lib(image.Latest()),
		imagedata.Lib(imagedata.Context{ContextInterface: NoCluster{}}, imagedata.Latest(), nil),
		user.Lib(user.Latest()),
		hash.Lib(hash.Latest()),
		math.Lib(math.Latest()),
		json.Lib(&json.JsonImpl{}, json.Latest()),
		yaml.Lib(&yaml.YamlImpl{}, yaml.Latest()),
		random.Lib(random.Latest()),
		x509.Lib(x509.Latest()),
		time.Lib(time.Latest()),
		transform.Lib(transform.Latest()),
		gzip.Lib(gzip.Latest()),
		http.Lib(http.Context{ContextInterface: NoCluster{}}, http.Latest()),
	)
}

// ErrNoCluster is the error of a library call that reads outside the
// request where nothing outside it is available.
var ErrNoCluster = errors.New("admitc has no cluster state, registry or HTTP access here")

// NoCluster is the stand-in context of Kyverno's libraries that read the
// cluster, a registry or HTTP: every call fails with ErrNoCluster.
type NoCluster struct{}

// ListResources implements resource.ContextInterface.
func (NoCluster) ListResources(string, string, string, map[string]string) (*unstructured.UnstructuredList, error) {
	return nil, ErrNoCluster
}

// GetResource implements resource.ContextInterface.
func (NoCluster) GetResource(string, string, string, string) (*unstructured.Unstructured, error) {
	return nil, ErrNoCluster
}

// PostResource implements resource.ContextInterface.
func (NoCluster) PostResource(string, string, string, map[string]any) (*unstructured.Unstructured, error) {
	return nil, ErrNoCluster
}

// ToGVR implements resource.ContextInterface.
func (NoCluster) ToGVR(string, string) (*schema.GroupVersionResource, error) {
	return nil, ErrNoCluster
}

// GetGlobalReference implements globalcontext.ContextInterface.
func (NoCluster) GetGlobalReference(string, string) (any, error) { return nil, ErrNoCluster }

// GetImageData implements imagedata.ContextInterface.
func (NoCluster) GetImageData(string, []remote.Option) (map[string]any, error) {
	return nil, ErrNoCluster
}

// Get implements http.ContextInterface.
func (NoCluster) Get(string, map[string]string) (any, error) { return nil, ErrNoCluster }

// Post implements http.ContextInterface.
func (NoCluster) Post(string, any, map[string]string) (any, error) { return nil, ErrNoCluster }

// Client implements http.ContextInterface.
func (NoCluster) Client(string) (http.ContextInterface, error) { return NoCluster{}, nil }

// Library is one of Kyverno's libraries that read outside the request.
type Library string

// Kyverno's libraries that read outside the request, by what they read.
const (
	// LibraryResource reads objects of the cluster (resource.Get/List/Post).
	LibraryResource Library = "resource"
	// LibraryGlobalContext reads Kyverno's global context entries.
	LibraryGlobalContext Library = "globalContext"
	// LibraryHTTP makes HTTP requests.
	LibraryHTTP Library = "http"
	// LibraryImageData reads image metadata from registries (image.GetMetadata).
	LibraryImageData Library = "imagedata"
)

// libraryContexts are the CEL types of the variables these libraries are
// called through.
var libraryContexts = map[string]Library{
	resource.ContextType.TypeName():      LibraryResource,
	globalcontext.ContextType.TypeName(): LibraryGlobalContext,
	http.ContextType.TypeName():          LibraryHTTP,
	imagedata.ContextType.TypeName():     LibraryImageData,
}

// LibraryUse is one expression's use of a library that reads outside the
// request.
type LibraryUse struct {
	Library Library
	Origin  ir.Origin
}

// LibraryUses lists where p's expressions call a library that reads
// outside the request, in expression order (one entry per expression and
// library). Only Kyverno's dialect has such libraries.
func LibraryUses(p *ir.Policy) []LibraryUse {
	if p.CEL != ir.CELKyverno {
		return nil
	}
	var out []LibraryUse
	for _, e := range CheckedExprs(p) {
		if e.AST == nil {
			continue
		}
		seen := map[Library]bool{}
		for _, n := range celast.MatchDescendants(celast.NavigateAST(e.AST.NativeRep()), celast.KindMatcher(celast.IdentKind)) {
			lib, ok := libraryContexts[n.Type().TypeName()]
			if ok && !seen[lib] {
				seen[lib] = true
				out = append(out, LibraryUse{Library: lib, Origin: e.Origin})
			}
		}
	}
	return out
}

// OrValueCompatFunction is the function Kyverno's orValue macro calls
// (x.orValue(y) is parsed as __orValueCompat__(x, y)).
const OrValueCompatFunction = "__orValueCompat__"

// KyvernoRequestTypeName is the CEL type name of Kyverno's "request".
var KyvernoRequestTypeName = kyvernocompiler.RequestType.CelType().TypeName()

// ExceptionsTypeName is the CEL type name of Kyverno's "exceptions".
const ExceptionsTypeName = "libs.Exception"

// ResourceRead is one call of Kyverno's resource library in a policy:
// what it reads, when its arguments are constant strings.
type ResourceRead struct {
	// Verb is "get" or "list" ("create" for resource.Post).
	Verb string
	// APIVersion, Resource and Namespace are the call's arguments; Known
	// is false when one of them is not a constant string (or, for a
	// namespaced policy, the namespace is the policy's).
	APIVersion, Resource, Namespace string
	Known                           bool
	Origin                          ir.Origin
}

// ResourceReads lists the calls of Kyverno's resource library in p.
func ResourceReads(p *ir.Policy) []ResourceRead {
	if p.CEL != ir.CELKyverno {
		return nil
	}
	verbs := map[string]string{"Get": "get", "get": "get", "List": "list", "list": "list", "Post": "create", "post": "create"}
	var out []ResourceRead
	for _, e := range CheckedExprs(p) {
		if e.AST == nil {
			continue
		}
		a := e.AST.NativeRep()
		for _, n := range celast.MatchDescendants(celast.NavigateAST(a), celast.KindMatcher(celast.CallKind)) {
			call := n.AsCall()
			verb, ok := verbs[call.FunctionName()]
			if !ok || !call.IsMemberFunction() || a.GetType(call.Target().ID()).TypeName() != resource.ContextType.TypeName() {
				continue
			}
			r := ResourceRead{Verb: verb, Origin: e.Origin, Known: true}
			args := call.Args()
			strs := make([]string, len(args))
			for i, arg := range args {
				if arg.Kind() != celast.LiteralKind {
					r.Known = false
					continue
				}
				if s, ok := arg.AsLiteral().(types.String); ok {
					strs[i] = string(s)
				} else {
					r.Known = false
				}
			}
			if len(strs) >= 2 {
				r.APIVersion, r.Resource = strs[0], strs[1]
			}
			if len(strs) >= 3 && p.CELNamespace == "" {
				r.Namespace = strs[2]
			} else if p.CELNamespace != "" {
				r.Namespace = p.CELNamespace
			}
			out = append(out, r)
		}
	}
	return out
}
