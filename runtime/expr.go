package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
)

// anyExpression is a CEL expression that may return any type.
type anyExpression string

func (e anyExpression) GetExpression() string      { return string(e) }
func (e anyExpression) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType} }

// CompileError is a CEL expression that does not compile; Detail is the
// compiler's report with positions and a caret.
type CompileError struct{ Detail string }

func (e *CompileError) Error() string { return e.Detail }

// EvalError is a CEL expression that failed at evaluation, such as
// "no such key: securityContext".
type EvalError struct{ Message string }

func (e *EvalError) Error() string { return e.Message }

// EvalExpression evaluates one CEL expression against req, in the
// environment of a ValidatingAdmissionPolicy (object, oldObject, request,
// namespaceObject, params when req has params) with the API server's cost
// budget, and returns the value as JSON.
func EvalExpression(ctx context.Context, expr string, req *Request) (json.RawMessage, error) {
	cc, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(celenv.RuntimeVersion()))
	if err != nil {
		return nil, err
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: len(req.Params) > 0}
	res := cc.CompileCELExpression(anyExpression(expr), opts, environment.StoredExpressions)
	if res.Error != nil {
		return nil, &CompileError{Detail: strings.TrimPrefix(res.Error.Detail, "compilation failed: ")}
	}
	ev := newEvaluation(ctx, req, req.Object)
	var params plugincel.OptionalVariableBindings
	if len(req.Params) > 0 {
		params.VersionedParams = req.Params[0]
	}
	out, _, err := plugincel.NewMutatingEvaluator(res).ForInput(cc.CreateContext(ctx), ev.attr,
		plugincel.CreateAdmissionRequest(ev.attr.Attributes, metav1.GroupVersionResource(req.Resource), metav1.GroupVersionKind(req.Kind)),
		params, ev.namespaceObject(), celconfig.RuntimeCELCostBudget)
	if err != nil {
		return nil, err
	}
	if out.Error != nil {
		return nil, &EvalError{Message: evalMessage(out.Error)}
	}
	v, err := out.EvalResult.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return nil, fmt.Errorf("the value (%s) cannot be shown as JSON: %w", out.EvalResult.Type().TypeName(), err)
	}
	b, err := protojson.Marshal(v.(*structpb.Value))
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

// evalMessage strips the API server's "expression '...' resulted in error: "
// prefix, leaving the CEL error itself.
func evalMessage(err error) string {
	var ce *apiservercel.Error
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Detail
	}
	if i := strings.Index(msg, "resulted in error: "); i >= 0 {
		return msg[i+len("resulted in error: "):]
	}
	return msg
}
