package vap

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

type reader struct {
	doc   *source.Doc
	diags diag.Diagnostics
}

func roundTrip(in, out runtime.Object) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// origin is the origin of the field at path, or of the document.
func (r *reader) origin(path string) ir.Origin {
	if n := r.doc.NodeAt(path); n != nil {
		return r.doc.Origin(n, path)
	}
	return r.doc.Origin(r.doc.Root, path)
}

func (r *reader) errorf(path, format string, args ...any) {
	r.diags = append(r.diags, diag.Diagnostic{Origin: r.origin(path), Message: fmt.Sprintf(format, args...)})
}

func failurePolicy(f *admissionregistrationv1.FailurePolicyType) ir.FailurePolicy {
	if f != nil && *f == admissionregistrationv1.Ignore {
		return ir.Ignore
	}
	return ir.Fail
}

func (r *reader) named(list string, items []admissionregistrationv1.Variable) []ir.NamedExpression {
	var out []ir.NamedExpression
	for i, v := range items {
		out = append(out, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: r.origin(fmt.Sprintf("%s[%d].expression", list, i))})
	}
	return out
}

func (r *reader) conditions(items []admissionregistrationv1.MatchCondition) []ir.NamedExpression {
	var out []ir.NamedExpression
	for i, c := range items {
		out = append(out, ir.NamedExpression{Name: c.Name, Expression: c.Expression, Origin: r.origin(fmt.Sprintf("spec.matchConditions[%d].expression", i))})
	}
	return out
}

func paramKind(k *admissionregistrationv1.ParamKind) *ir.ParamKind {
	if k == nil {
		return nil
	}
	return &ir.ParamKind{APIVersion: k.APIVersion, Kind: k.Kind}
}

func (r *reader) validating(o *admissionregistrationv1.ValidatingAdmissionPolicy) *ir.Policy {
	s := o.Spec
	p := &ir.Policy{
		Name: o.Name, Type: Type, Kind: ir.Validating, Origin: r.origin(""),
		FailurePolicy: failurePolicy(s.FailurePolicy), MatchConstraints: apiconv.FromMatchResources(s.MatchConstraints),
		ParamKind: paramKind(s.ParamKind), MatchConditions: r.conditions(s.MatchConditions),
		Variables: r.named("spec.variables", s.Variables),
	}
	for i, v := range s.Validations {
		path := fmt.Sprintf("spec.validations[%d]", i)
		val := ir.Validation{Expression: v.Expression, Message: v.Message, MessageExpression: v.MessageExpression, Origin: r.origin(path + ".expression")}
		if v.Reason != nil {
			val.Reason = string(*v.Reason)
		}
		if v.MessageExpression != "" {
			mo := r.origin(path + ".messageExpression")
			val.MessageExpressionOrigin = &mo
		}
		p.Validations = append(p.Validations, val)
	}
	for i, a := range s.AuditAnnotations {
		p.AuditAnnotations = append(p.AuditAnnotations, ir.AuditAnnotation{Key: a.Key, ValueExpression: a.ValueExpression, Origin: r.origin(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i))})
	}
	return p
}

func (r *reader) validatingBinding(o *admissionregistrationv1.ValidatingAdmissionPolicyBinding) *ir.Binding {
	b := &ir.Binding{Name: o.Name, Origin: r.origin(""), MatchResources: apiconv.FromMatchResources(o.Spec.MatchResources), ParamRef: apiconv.FromParamRef(o.Spec.ParamRef)}
	for _, a := range o.Spec.ValidationActions {
		b.Actions = append(b.Actions, ir.Action(a))
	}
	return b
}

func (r *reader) mutating(o *admissionregistrationv1.MutatingAdmissionPolicy) *ir.Policy {
	s := o.Spec
	p := &ir.Policy{
		Name: o.Name, Type: Type, Kind: ir.Mutating, Origin: r.origin(""),
		FailurePolicy: failurePolicy(s.FailurePolicy), MatchConstraints: apiconv.FromMatchResources(s.MatchConstraints),
		ParamKind: paramKind(s.ParamKind), MatchConditions: r.conditions(s.MatchConditions),
		Variables: r.named("spec.variables", s.Variables), ReinvocationPolicy: ir.ReinvokeNever,
	}
	if s.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
		p.ReinvocationPolicy = ir.ReinvokeIfNeeded
	}
	for i, m := range s.Mutations {
		path := fmt.Sprintf("spec.mutations[%d]", i)
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			p.Mutations = append(p.Mutations, ir.Mutation{PatchType: ir.JSONPatch, Expression: m.JSONPatch.Expression, Origin: r.origin(path + ".jsonPatch.expression")})
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			p.Mutations = append(p.Mutations, ir.Mutation{PatchType: ir.ApplyConfiguration, Expression: m.ApplyConfiguration.Expression, Origin: r.origin(path + ".applyConfiguration.expression")})
		default:
			r.errorf(path+".patchType", "patchType %q needs its matching field (jsonPatch or applyConfiguration)", m.PatchType)
		}
	}
	return p
}

func (r *reader) mutatingBinding(o *admissionregistrationv1.MutatingAdmissionPolicyBinding) *ir.Binding {
	return &ir.Binding{Name: o.Name, Origin: r.origin(""), MatchResources: apiconv.FromMatchResources(o.Spec.MatchResources), ParamRef: apiconv.FromParamRef(o.Spec.ParamRef)}
}
