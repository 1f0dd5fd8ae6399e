package runtime

import (
	"errors"
	"fmt"
	"strings"

	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// fastValidate is the upstream validator's Validate
// (k8s.io/apiserver/pkg/admission/plugin/policy/validating/validator.go)
// over the review's shared inputs: the same expression lists in the same
// order with the same budgets, the same decisions and messages.
func (ev *evaluation) fastValidate(p *ir.Policy, progs *celenv.Programs, params k8sruntime.Object) validating.ValidateResult {
	f := *celenv.FailurePolicy(p.FailurePolicy)
	if len(progs.MatchConditions) > 0 {
		m := ev.fastMatch(progs, params, f)
		if m.Error != nil {
			return errorResult(f, m.Error)
		}
		if !m.Matches {
			return validating.ValidateResult{}
		}
	}
	rk := requestKey{gvr: metav1.GroupVersionResource(ev.req.Resource), gvk: metav1.GroupVersionKind(ev.attr.VersionedKind)}
	in, err := ev.celInputs(rk, params, nsStripped)
	if err != nil {
		return errorResult(f, err)
	}
	evals, remaining, err := ev.newScope(progs, in).forInput(progs.Validations, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return errorResult(f, err)
	}
	msgs, _, msgErr := ev.newScope(progs, in).forInput(progs.Messages, remaining)
	decisions := make([]validating.PolicyDecision, len(evals))
	for i := range evals {
		var msg *plugincel.EvaluationResult
		if len(msgs) > i {
			msg = &msgs[i]
		}
		decisions[i] = decide(f, &evals[i], msg, msgErr)
	}
	auditIn, err := ev.celInputs(rk, params, nsFull)
	if err != nil {
		return errorResult(f, err)
	}
	audits, _, err := ev.newScope(progs, auditIn).forInput(progs.AuditAnnotations, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return errorResult(f, err)
	}
	annotations := make([]validating.PolicyAuditAnnotation, len(audits))
	for i := range audits {
		annotations[i] = auditAnnotation(f, &audits[i])
	}
	return validating.ValidateResult{Decisions: decisions, AuditAnnotations: annotations}
}

func errorResult(f admissionregistrationv1.FailurePolicyType, err error) validating.ValidateResult {
	return validating.ValidateResult{Decisions: []validating.PolicyDecision{{Action: actionForError(f), Evaluation: validating.EvalError, Message: err.Error()}}}
}

func actionForError(f admissionregistrationv1.FailurePolicyType) validating.PolicyDecisionAction {
	if f == admissionregistrationv1.Ignore {
		return validating.ActionAdmit
	}
	return validating.ActionDeny
}

// decide turns one validation's result (and its message's) into a decision.
func decide(f admissionregistrationv1.FailurePolicyType, r *plugincel.EvaluationResult, msg *plugincel.EvaluationResult, msgErr error) validating.PolicyDecision {
	d := validating.PolicyDecision{Elapsed: r.Elapsed}
	v, ok := r.ExpressionAccessor.(*validating.ValidationCondition)
	switch {
	case !ok:
		d.Action, d.Evaluation, d.Message = actionForError(f), validating.EvalError, "Invalid type sent to validator, expected ValidationCondition"
	case r.Error != nil:
		d.Action, d.Evaluation, d.Message = actionForError(f), validating.EvalError, r.Error.Error()
	case errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget):
		d.Action, d.Evaluation, d.Message = actionForError(f), validating.EvalError, fmt.Sprintf("failed messageExpression: %s", msgErr)
	case r.EvalResult != celtypes.True:
		d.Action, d.Evaluation, d.Reason = validating.ActionDeny, validating.EvalDeny, metav1.StatusReasonInvalid
		if v.Reason != nil {
			d.Reason = *v.Reason
		}
		d.Message = failureMessage(v, msg)
	default:
		d.Action, d.Evaluation = validating.ActionAdmit, validating.EvalAdmit
	}
	return d
}

// failureMessage is the message of a failed validation: its
// messageExpression's result when usable, else its message, else the
// expression.
func failureMessage(v *validating.ValidationCondition, msg *plugincel.EvaluationResult) string {
	var message string
	if msg != nil && msg.Error == nil && msg.EvalResult != nil {
		if s, ok := msg.EvalResult.Value().(string); ok {
			message = strings.TrimSpace(s)
			if len(message) > celconfig.MaxEvaluatedMessageExpressionSizeBytes || strings.ContainsAny(message, "\n") {
				message = ""
			}
		}
	}
	if message == "" && len(v.Message) > 0 {
		message = strings.TrimSpace(v.Message)
	}
	if message == "" {
		message = fmt.Sprintf("failed expression: %v", strings.TrimSpace(v.Expression))
	}
	return message
}

// auditAnnotation turns one audit annotation's result into its action.
func auditAnnotation(f admissionregistrationv1.FailurePolicyType, r *plugincel.EvaluationResult) validating.PolicyAuditAnnotation {
	var out validating.PolicyAuditAnnotation
	if r.ExpressionAccessor == nil {
		return out
	}
	out.Elapsed = r.Elapsed
	a, ok := r.ExpressionAccessor.(*validating.AuditAnnotationCondition)
	if !ok {
		out.Action = auditActionForError(f)
		out.Error = fmt.Sprintf("Invalid type sent to validator, expected AuditAnnotationCondition but got %T", r.ExpressionAccessor)
		return out
	}
	out.Key = a.Key
	if r.Error != nil {
		out.Action, out.Error = auditActionForError(f), r.Error.Error()
		return out
	}
	switch r.EvalResult.Type() {
	case celtypes.StringType:
		value := strings.TrimSpace(r.EvalResult.Value().(string))
		if len(value) == 0 {
			out.Action = validating.AuditAnnotationActionExclude
		} else {
			out.Action, out.Value = validating.AuditAnnotationActionPublish, value
		}
	case celtypes.NullType:
		out.Action = validating.AuditAnnotationActionExclude
	default:
		out.Action = validating.AuditAnnotationActionError
		out.Error = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. "+
			"Return type must be either string or null.", a.ValueExpression, r.EvalResult.Type())
	}
	return out
}

func auditActionForError(f admissionregistrationv1.FailurePolicyType) validating.PolicyAuditAnnotationAction {
	if f == admissionregistrationv1.Ignore {
		return validating.AuditAnnotationActionExclude
	}
	return validating.AuditAnnotationActionError
}

// fastMatch is the upstream match-condition matcher's Match
// (k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions): no
// namespace object, its own budget, a false condition wins over errors.
func (ev *evaluation) fastMatch(progs *celenv.Programs, params k8sruntime.Object, f admissionregistrationv1.FailurePolicyType) matchconditions.MatchResult {
	rk := requestKey{gvr: metav1.GroupVersionResource(ev.attr.GetResource()), gvk: metav1.GroupVersionKind(ev.attr.VersionedKind)}
	in, err := ev.celInputs(rk, params, nsNone)
	var evals []plugincel.EvaluationResult
	if err == nil {
		evals, _, err = ev.newScope(progs, in).forInput(progs.MatchConditions, celconfig.RuntimeCELCostBudgetMatchConditions)
	}
	if err != nil {
		if f == admissionregistrationv1.Ignore {
			return matchconditions.MatchResult{}
		}
		return matchconditions.MatchResult{Error: err}
	}
	var errs []error
	for _, r := range evals {
		mc, ok := r.ExpressionAccessor.(*matchconditions.MatchCondition)
		if !ok {
			errs = append(errs, errors.New("internal error converting ExpressionAccessor to MatchCondition"))
			continue
		}
		if r.Error != nil {
			errs = append(errs, r.Error)
		}
		if r.EvalResult == celtypes.False {
			return matchconditions.MatchResult{FailedConditionName: mc.Name}
		}
	}
	if len(errs) > 0 {
		if f == admissionregistrationv1.Ignore {
			return matchconditions.MatchResult{}
		}
		return matchconditions.MatchResult{Error: utilerrors.NewAggregate(errs)}
	}
	return matchconditions.MatchResult{Matches: true}
}
