package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// Engine evaluates a compiled policy set. It is safe for concurrent use.
type Engine struct {
	set      *ir.PolicySet
	compiled []*celenv.CompiledPolicy
	// usesNamespace is true when some expression reads namespaceObject;
	// otherwise building it (a conversion per evaluation) is skipped.
	usesNamespace bool
}

// NewEngine compiles every policy of set for evaluation.
func NewEngine(set *ir.PolicySet) (*Engine, error) {
	e := &Engine{set: set, usesNamespace: mentions(set, "namespaceObject")}
	for i := range set.Policies {
		c, err := celenv.Compile(&set.Policies[i])
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", set.Policies[i].Name, err)
		}
		e.compiled = append(e.compiled, c)
	}
	return e, nil
}

// PolicySet returns the set the engine evaluates.
func (e *Engine) PolicySet() *ir.PolicySet { return e.set }

var objectInterfaces = admission.NewObjectInterfacesFromScheme(k8sruntime.NewScheme())

// evaluation is the per-request state shared by mutation and validation.
type evaluation struct {
	req  *Request
	attr *admission.VersionedAttributes
	ns   *corev1.Namespace
}

func (e *Engine) newEvaluation(req *Request, obj *unstructured.Unstructured) *evaluation {
	ev := newEvaluation(req, obj)
	if !e.usesNamespace {
		ev.ns = nil
	}
	return ev
}

func newEvaluation(req *Request, obj *unstructured.Unstructured) *evaluation {
	var object, old k8sruntime.Object
	if obj != nil {
		object = obj
	}
	if req.OldObject != nil {
		old = req.OldObject
	}
	attrs := admission.NewAttributesRecord(object, old, req.Kind, req.Namespace, req.Name, req.Resource,
		req.SubResource, admission.Operation(req.Operation), nil, req.DryRun, req.User)
	ev := &evaluation{req: req, attr: &admission.VersionedAttributes{
		Attributes: attrs, VersionedKind: req.Kind, VersionedObject: object, VersionedOldObject: old,
	}}
	if req.Namespace != "" {
		labels := map[string]string{corev1.LabelMetadataName: req.Namespace}
		for k, v := range req.NamespaceLabels {
			labels[k] = v
		}
		ev.ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: req.Namespace, Labels: labels}}
	}
	return ev
}

// params finds the parameter object for p. found is false when p needs one
// and none matches its paramRef.
func (ev *evaluation) params(p *ir.Policy) (k8sruntime.Object, bool) {
	if p.ParamKind == nil {
		return nil, true
	}
	for _, obj := range ev.req.Params {
		if obj.GetAPIVersion() != p.ParamKind.APIVersion || obj.GetKind() != p.ParamKind.Kind {
			continue
		}
		if p.ParamRef != nil && p.ParamRef.Name != "" && obj.GetName() != p.ParamRef.Name {
			continue
		}
		ns := obj.GetNamespace()
		if p.ParamRef != nil && p.ParamRef.Namespace != "" && ns != "" && ns != p.ParamRef.Namespace {
			continue
		}
		return obj, true
	}
	return nil, false
}

// paramNotFound is the API server's configuration error for a binding whose
// parameter object does not exist.
var errParamNotFound = errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")

// Admit runs the admission chain on req in the API server's order: every
// matching mutation, then every matching validation on the mutated object.
func (e *Engine) Admit(ctx context.Context, req *Request) (*Result, error) {
	res, err := e.Mutate(ctx, req)
	if err != nil {
		return nil, err
	}
	mutated := *req
	mutated.Object = res.Object
	v, err := e.Validate(ctx, &mutated)
	if err != nil {
		return nil, err
	}
	res.Violations = append(res.Violations, v.Violations...)
	res.AuditAnnotations = mergeAnnotations(res.AuditAnnotations, v.AuditAnnotations)
	res.Fired = appendUnique(res.Fired, v.Fired...)
	res.Trace = append(res.Trace, v.Trace...)
	return res, nil
}

// Validate runs every matching validating policy on req.Object.
func (e *Engine) Validate(ctx context.Context, req *Request) (*Result, error) {
	res := &Result{Object: req.Object}
	ev := e.newEvaluation(req, req.Object)
	for i := range e.set.Policies {
		p := &e.set.Policies[i]
		if p.Kind != ir.Validating {
			continue
		}
		if !Matches(p, req) {
			res.trace(req.Explain, p, NotMatched, whyNotMatched(p, req))
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o, detail := e.validateOne(ctx, ev, p, e.compiled[i], res)
		res.trace(req.Explain, p, o, detail)
	}
	return res, nil
}

// validateOne evaluates one matching validating policy into res and says
// what it did.
func (e *Engine) validateOne(ctx context.Context, ev *evaluation, p *ir.Policy, c *celenv.CompiledPolicy, res *Result) (Outcome, string) {
	params, found := ev.params(p)
	if !found {
		if p.ParamRef != nil && p.ParamRef.ParameterNotFoundAction == ir.ParamAllow {
			return NoParams, "no parameter object; parameterNotFoundAction Allow"
		}
		if p.FailurePolicy != ir.Ignore {
			res.addViolation(Violation{Policy: p.Name, Actions: []ir.Action{ir.Deny}, Message: "failed to configure binding: " + errParamNotFound.Error(), Error: true})
			return Violated, "no parameter object"
		}
		return Failed, "no parameter object; ignored by failurePolicy Ignore"
	}
	out := c.Validator.Validate(ctx, ev.req.Resource, ev.attr, params, ev.ns, celconfig.RuntimeCELCostBudget, nil)
	if len(out.Decisions) == 0 {
		return SkippedByConditions, "a matchCondition is false"
	}
	outcome, detail := Passed, ""
	for _, d := range out.Decisions {
		switch {
		case d.Evaluation == validating.EvalDeny:
			res.addViolation(Violation{Policy: p.Name, Actions: p.Actions, Message: d.Message})
			outcome = Violated
		case d.Evaluation == validating.EvalError && d.Action == validating.ActionDeny:
			res.addViolation(Violation{Policy: p.Name, Actions: p.Actions, Message: d.Message, Error: true})
			outcome, detail = Violated, "evaluation error"
		case d.Evaluation == validating.EvalError && outcome == Passed:
			outcome, detail = Failed, "evaluation error ignored by failurePolicy Ignore: "+d.Message
		}
	}
	for _, a := range out.AuditAnnotations {
		if a.Action == validating.AuditAnnotationActionPublish {
			res.setAnnotation(p.Name+"."+a.Key, a.Value)
		} else if a.Action == validating.AuditAnnotationActionError {
			res.addViolation(Violation{Policy: p.Name, Actions: p.Actions, Message: a.Error, Error: true})
			outcome, detail = Violated, "audit annotation error"
		}
	}
	return outcome, detail
}

// Mutate runs every matching mutating policy on req.Object, in order, each
// seeing the previous ones' result. The returned result's Object is the
// mutated copy; req.Object is not changed (the upstream patchers return new
// objects and never modify their input).
func (e *Engine) Mutate(ctx context.Context, req *Request) (*Result, error) {
	res := &Result{Object: req.Object}
	if req.Object == nil {
		return res, nil
	}
	current := req.Object
	for i := range e.set.Policies {
		p := &e.set.Policies[i]
		if p.Kind != ir.Mutating {
			continue
		}
		if !Matches(p, req) {
			res.trace(req.Explain, p, NotMatched, whyNotMatched(p, req))
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next, skipped, err := e.mutateOne(ctx, req, current, p, e.compiled[i])
		switch {
		case err != nil && p.FailurePolicy != ir.Ignore:
			res.addViolation(Violation{Policy: p.Name, Actions: []ir.Action{ir.Deny}, Message: err.Error(), Error: true})
			res.trace(req.Explain, p, Violated, err.Error())
			continue
		case err != nil:
			res.trace(req.Explain, p, Failed, "ignored by failurePolicy Ignore: "+err.Error())
			continue
		case skipped != "":
			res.trace(req.Explain, p, SkippedByConditions, skipped)
			continue
		case next == current:
			res.trace(req.Explain, p, Unchanged, "")
			continue
		}
		ops, err := Diff(current, next)
		if err != nil {
			return nil, err
		}
		if len(ops) > 0 {
			res.Patches = append(res.Patches, PolicyPatch{Policy: p.Name, Ops: ops})
			res.Fired = appendUnique(res.Fired, p.Name)
			res.trace(req.Explain, p, Mutated, fmt.Sprintf("%d patch operation(s)", len(ops)))
		} else {
			res.trace(req.Explain, p, Unchanged, "")
		}
		current = next
	}
	res.Object = current
	if current == req.Object {
		return res, nil
	}
	patch, err := Diff(req.Object, current)
	if err != nil {
		return nil, err
	}
	res.Patch = patch
	return res, nil
}

// mutateOne runs one matching mutating policy; skipped says why it did not
// run (no params under Allow, a false matchCondition), else "".
func (e *Engine) mutateOne(ctx context.Context, req *Request, obj *unstructured.Unstructured, p *ir.Policy, c *celenv.CompiledPolicy) (_ *unstructured.Unstructured, skipped string, _ error) {
	ev := e.newEvaluation(req, obj)
	params, found := ev.params(p)
	if !found {
		if p.ParamRef != nil && p.ParamRef.ParameterNotFoundAction == ir.ParamAllow {
			return obj, "no parameter object; parameterNotFoundAction Allow", nil
		}
		return nil, "", fmt.Errorf("failed to configure binding: %w", errParamNotFound)
	}
	// As the API server's mutating dispatcher: one composition context per
	// policy invocation, so variables resolve for matcher and mutations.
	ctx = c.Compiler.CreateContext(ctx)
	if c.Matcher != nil {
		m := c.Matcher.Match(ctx, ev.attr, params, nil)
		if m.Error != nil {
			return nil, "", m.Error
		}
		if !m.Matches {
			return obj, "a matchCondition is false", nil
		}
	}
	for _, patcher := range c.Patchers {
		out, err := patcher.Patch(ctx, patch.Request{
			MatchedResource:     req.Resource,
			VersionedAttributes: ev.attr,
			ObjectInterfaces:    objectInterfaces,
			OptionalVariables:   plugincel.OptionalVariableBindings{VersionedParams: params},
			Namespace:           ev.ns,
		}, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return nil, "", err
		}
		u, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, "", fmt.Errorf("mutation returned %T, want an unstructured object", out)
		}
		ev.attr.VersionedObject = u
		obj = u
	}
	return obj, "", nil
}

// mentions reports whether any expression of the set contains name. It is
// conservative: a mention inside a string literal also counts.
func mentions(set *ir.PolicySet, name string) bool {
	for _, p := range set.Policies {
		var exprs []string
		for _, v := range p.Variables {
			exprs = append(exprs, v.Expression)
		}
		for _, m := range p.MatchConditions {
			exprs = append(exprs, m.Expression)
		}
		for _, v := range p.Validations {
			exprs = append(exprs, v.Expression, v.MessageExpression)
		}
		for _, a := range p.AuditAnnotations {
			exprs = append(exprs, a.ValueExpression)
		}
		for _, m := range p.Mutations {
			exprs = append(exprs, m.Expression)
		}
		for _, x := range exprs {
			if strings.Contains(x, name) {
				return true
			}
		}
	}
	return false
}
