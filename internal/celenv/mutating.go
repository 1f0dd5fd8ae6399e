package celenv

import (
	"context"
	"errors"

	"github.com/google/cel-go/common/types/ref"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
)

// ExpressionEvaluator evaluates a compiled expression in an activation of
// its caller's: Kyverno's dialect has variables (the libraries' contexts,
// request.object, exceptions) the API server's activation does not, so a
// Kyverno mutation is evaluated by the runtime, which puts its evaluator
// in the context (WithExpressionEvaluator) before calling the upstream
// patcher.
type ExpressionEvaluator interface {
	// Evaluate evaluates r on attr's current object.
	Evaluate(ctx context.Context, r *plugincel.CompilationResult, attr *admission.VersionedAttributes) (ref.Val, error)
}

type evaluatorKey struct{}

// WithExpressionEvaluator returns ctx carrying e.
func WithExpressionEvaluator(ctx context.Context, e ExpressionEvaluator) context.Context {
	return context.WithValue(ctx, evaluatorKey{}, e)
}

// contextEvaluator is a MutatingEvaluator that evaluates its expression
// with the ExpressionEvaluator of the context it is called in.
type contextEvaluator struct {
	result plugincel.CompilationResult
}

var _ plugincel.MutatingEvaluator = (*contextEvaluator)(nil)

// ForInput implements plugincel.MutatingEvaluator.
func (c *contextEvaluator) ForInput(ctx context.Context, attr *admission.VersionedAttributes, _ *admissionv1.AdmissionRequest, _ plugincel.OptionalVariableBindings, _ *corev1.Namespace, budget int64) (plugincel.EvaluationResult, int64, error) {
	out := plugincel.EvaluationResult{ExpressionAccessor: c.result.ExpressionAccessor}
	e, ok := ctx.Value(evaluatorKey{}).(ExpressionEvaluator)
	if !ok {
		return out, -1, errors.New("internal error: a Kyverno mutation evaluated without its evaluator")
	}
	val, err := e.Evaluate(ctx, &c.result, attr)
	if err != nil {
		out.Error = err
	}
	out.EvalResult = val
	return out, budget, nil
}

// CompilationErrors implements plugincel.MutatingEvaluator.
func (c *contextEvaluator) CompilationErrors() []error {
	if c.result.Error != nil {
		return []error{c.result.Error}
	}
	return nil
}
