package runtime

import (
	"context"
	"errors"
	"fmt"

	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	kyvernocompiler "github.com/kyverno/kyverno/pkg/cel/compiler"
	"github.com/kyverno/sdk/extensions/cel/libs/globalcontext"
	"github.com/kyverno/sdk/extensions/cel/libs/http"
	"github.com/kyverno/sdk/extensions/cel/libs/imagedata"
	"github.com/kyverno/sdk/extensions/cel/libs/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/celenv/libs"
	"github.com/admitc/admitc/ir"
)

// A Kyverno ValidatingPolicy is evaluated as Kyverno v1.19.1 evaluates it
// (pkg/cel/policies/vpol/compiler/policy.go, evaluateWithData, and
// vpol/engine handlePolicy), not as a ValidatingAdmissionPolicy:
//
//   - matchConditions: a false one skips the policy; otherwise errors are
//     the policy's error under failurePolicy Fail and a skip under Ignore;
//   - validations run in order and the first that is not true decides:
//     an error is the policy's error whatever its failurePolicy, false is
//     its failure with the message, the messageExpression's result, or
//     "CEL expression validation failed at index N";
//   - audit annotations are evaluated when the policy passes or fails;
//   - there is no runtime cost budget across expressions (each expression
//     still has the API server's per-call limit, as Kyverno's programs do).
//
// Decisions are returned as the upstream validator returns them, so the
// engine records them alike: one decision, Deny for a failure or an
// error (Error marks the latter).

// kyvernoValidate evaluates p, a policy of Kyverno's CEL dialect.
func (ev *evaluation) kyvernoValidate(p *ir.Policy, progs *celenv.Programs) validating.ValidateResult {
	if ev.review == nil {
		ev.review = newReviewState()
	}
	rk := requestKey{gvr: metav1.GroupVersionResource(ev.req.Resource), gvk: metav1.GroupVersionKind(ev.attr.VersionedKind)}
	in, err := ev.kyvernoInputs(rk)
	if err != nil {
		return kyvernoError("failed to load context", err)
	}
	s := ev.newScope(progs, in)
	s.act.kyverno = ev.kyvernoContexts(p)
	if matched, err := s.kyvernoMatch(progs.MatchConditions); err != nil {
		if p.FailurePolicy == ir.Ignore {
			return validating.ValidateResult{}
		}
		return kyvernoError("failed to load context", err)
	} else if !matched {
		return validating.ValidateResult{}
	}
	for i := range progs.Validations {
		out, err := s.kyvernoEval(&progs.Validations[i])
		if err != nil {
			return kyvernoError("error", err)
		}
		if out == celtypes.True {
			continue
		}
		if _, ok := out.(celtypes.Bool); !ok {
			return kyvernoError("error", fmt.Errorf("expression %d did not evaluate to a bool", i))
		}
		msg := s.kyvernoMessage(i, &progs.Validations[i], progs.Messages)
		if err := s.kyvernoAudit(progs.AuditAnnotations, nil); err != nil {
			return kyvernoError("error", err)
		}
		return validating.ValidateResult{Decisions: []validating.PolicyDecision{{Action: validating.ActionDeny, Evaluation: validating.EvalDeny, Message: msg, Reason: metav1.StatusReasonInvalid}}}
	}
	var annotations []validating.PolicyAuditAnnotation
	if err := s.kyvernoAudit(progs.AuditAnnotations, &annotations); err != nil {
		return kyvernoError("failed to load context", err)
	}
	return validating.ValidateResult{Decisions: []validating.PolicyDecision{{Action: validating.ActionAdmit, Evaluation: validating.EvalAdmit}}, AuditAnnotations: annotations}
}

// kyvernoError is a rule error as Kyverno reports it (engineapi.RuleError):
// "msg: err". It denies whatever the failure policy.
func kyvernoError(msg string, err error) validating.ValidateResult {
	return validating.ValidateResult{Decisions: []validating.PolicyDecision{{Action: validating.ActionDeny, Evaluation: validating.EvalError, Message: msg + ": " + err.Error()}}}
}

// kyvernoMatch is vpol's Policy.match: a false condition wins, errors are
// combined.
func (s *celScope) kyvernoMatch(conds []plugincel.CompilationResult) (bool, error) {
	var errs []error
	for i := range conds {
		out, err := s.kyvernoEval(&conds[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b, ok := out.(celtypes.Bool)
		if !ok {
			errs = append(errs, fmt.Errorf("type conversion error from '%s' to 'bool'", out.Type().TypeName()))
			continue
		}
		if !b {
			return false, nil
		}
	}
	return len(errs) == 0, errors.Join(errs...)
}

// kyvernoEval evaluates one compiled expression in the scope, as Kyverno
// calls Program.ContextEval: the error is the program's own.
func (s *celScope) kyvernoEval(r *plugincel.CompilationResult) (ref.Val, error) {
	if r.Error != nil {
		return nil, r.Error
	}
	out, _, err := r.Program.ContextEval(s.ctx, s.act)
	return out, err
}

// kyvernoMessage is the message of validation i, which failed.
func (s *celScope) kyvernoMessage(i int, r *plugincel.CompilationResult, msgs []plugincel.CompilationResult) string {
	v, _ := r.ExpressionAccessor.(*validating.ValidationCondition)
	message := ""
	if v != nil {
		message = v.Message
	}
	if i < len(msgs) && msgs[i].ExpressionAccessor != nil {
		out, err := s.kyvernoEval(&msgs[i])
		switch str, ok := out.(celtypes.String); {
		case err != nil:
			message = fmt.Sprintf("failed to evaluate message expression: %s", err)
		case !ok:
			message = fmt.Sprintf("failed to convert message expression to string: type conversion error from '%s' to 'string'", out.Type().TypeName())
		default:
			message = string(str)
		}
	}
	if message == "" {
		message = fmt.Sprintf("CEL expression validation failed at index %d", i)
	}
	return message
}

// kyvernoAudit is vpol's evaluateAuditAnnotations: every annotation, an
// error ends it; into, when not nil, gets the non-empty values.
func (s *celScope) kyvernoAudit(anns []plugincel.CompilationResult, into *[]validating.PolicyAuditAnnotation) error {
	for i := range anns {
		a, _ := anns[i].ExpressionAccessor.(*validating.AuditAnnotationCondition)
		out, err := s.kyvernoEval(&anns[i])
		if err != nil {
			return fmt.Errorf("failed to evaluate auditAnnotation '%s': %w", a.Key, err)
		}
		if out == celtypes.NullValue {
			continue
		}
		str, ok := out.(celtypes.String)
		if !ok {
			return fmt.Errorf("failed to convert auditAnnotation '%s' expression: type conversion error from '%s' to 'string'", a.Key, out.Type().TypeName())
		}
		if into != nil && str != "" {
			*into = append(*into, validating.PolicyAuditAnnotation{Key: a.Key, Value: string(str), Action: validating.AuditAnnotationActionPublish})
		}
	}
	return nil
}

// kyvernoInputs are the inputs of Kyverno's activation: the object, the
// old object, the namespace as read (not the API server's stripped copy)
// and a request that also carries object and oldObject.
func (ev *evaluation) kyvernoInputs(rk requestKey) (*celInputs, error) {
	in, err := ev.celInputs(rk, nil, nsFull)
	if err != nil {
		return nil, err
	}
	req := make(map[string]any, len(in.request.(map[string]any))+2)
	for k, v := range in.request.(map[string]any) {
		req[k] = v
	}
	req[plugincel.ObjectVarName] = in.object
	req[plugincel.OldObjectVarName] = in.oldObject
	k := *in
	k.request = req
	return &k, nil
}

// kyvernoContexts are the values of the variables Kyverno's libraries read
// the cluster through, for this evaluation.
func (ev *evaluation) kyvernoContexts(p *ir.Policy) *kyvernoVars {
	v := &kyvernoVars{
		resource:      resource.Context{ContextInterface: celenv.NoCluster{}},
		globalContext: globalcontext.Context{ContextInterface: celenv.NoCluster{}},
		http:          http.Context{ContextInterface: celenv.NoCluster{}},
		imageData:     imagedata.Context{ContextInterface: celenv.NoCluster{}},
	}
	if src, ok := ev.state.(KyvernoContextSource); ok {
		if lib := src.KyvernoContext(); lib != nil {
			c := libraryContext{KyvernoLibraryContext: lib}
			v.resource = resource.Context{ContextInterface: c}
			v.globalContext = globalcontext.Context{ContextInterface: kyvernocompiler.ConfineGlobalContext(c, p.CELNamespace)}
		}
	}
	return v
}

// kyvernoVars are the variables of Kyverno's dialect besides the API
// server's: the libraries' contexts and the (empty) exceptions.
type kyvernoVars struct {
	resource      resource.Context
	globalContext globalcontext.Context
	http          http.Context
	imageData     imagedata.Context
}

// resolve resolves one of Kyverno's own variables.
func (k *kyvernoVars) resolve(name string) (any, bool) {
	switch name {
	case celenv.ResourceVar:
		return k.resource, true
	case celenv.GlobalContextVar:
		return k.globalContext, true
	case celenv.HTTPVar:
		return k.http, true
	case celenv.ImageDataVar:
		return k.imageData, true
	case celenv.ExceptionsVar:
		return libs.Exception{AllowedImages: []string{}, AllowedValues: []string{}}, true
	}
	return nil, false
}

// kyvernoMutate runs a MutatingPolicy of Kyverno's dialect as Kyverno
// v1.19.1 does (pkg/cel/policies/mpol/compiler/policy.go, evaluate): its
// variables bound lazily and visible to its matchConditions, a false
// condition skips it, an error of a condition is its error whatever its
// failurePolicy, and each mutation sees the object the previous one
// patched. The upstream patchers apply the patches (Kyverno's are copies
// of them); the expressions are evaluated in Kyverno's activation.
func (e *Engine) kyvernoMutate(ctx context.Context, ev *evaluation, obj *unstructured.Unstructured, p *ir.Policy, c *celenv.CompiledPolicy) (_ *unstructured.Unstructured, skipped string, _ error) {
	if ev.review == nil {
		ev.review = newReviewState()
	}
	rk := requestKey{gvr: metav1.GroupVersionResource(ev.req.Resource), gvk: metav1.GroupVersionKind(ev.attr.VersionedKind)}
	in, err := ev.kyvernoInputs(rk)
	if err != nil {
		return nil, "", fmt.Errorf("failed to evaluate policy: %w", err)
	}
	s := ev.newScope(c.Programs, in)
	s.act.kyverno = ev.kyvernoContexts(p)
	matched, err := s.kyvernoMatch(c.Programs.MatchConditions)
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("failed to evaluate policy: %w", err)
	case !matched:
		return obj, "a matchCondition is false", nil
	}
	ctx = celenv.WithExpressionEvaluator(ctx, kyvernoEvaluator{s})
	for _, patcher := range c.Patchers {
		out, err := patcher.Patch(ctx, patch.Request{
			MatchedResource:     ev.req.Resource,
			VersionedAttributes: ev.attr,
			ObjectInterfaces:    objectInterfaces,
			Namespace:           ev.namespaceObject(),
			TypeConverter:       typeConverter(ev.req.Kind),
		}, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return nil, "", fmt.Errorf("failed to evaluate policy: %w", err)
		}
		u, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, "", fmt.Errorf("mutation returned %T, want an unstructured object", out)
		}
		ev.attr.VersionedObject, obj = u, u
		in.object = u.Object
	}
	return obj, "", nil
}

// kyvernoEvaluator evaluates a Kyverno mutation in a policy's scope.
type kyvernoEvaluator struct{ s *celScope }

// Evaluate implements celenv.ExpressionEvaluator.
func (k kyvernoEvaluator) Evaluate(_ context.Context, r *plugincel.CompilationResult, _ *admission.VersionedAttributes) (ref.Val, error) {
	return k.s.kyvernoEval(r)
}
