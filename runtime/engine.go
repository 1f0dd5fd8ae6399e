package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/openapi/openapitest"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// Engine evaluates a compiled policy set. It is safe for concurrent use.
type Engine struct {
	set      *ir.PolicySet
	compiled []*celenv.CompiledPolicy
	// forms are the other forms of typed policies, compiled on first use
	// (forms.go); nil for a policy that has none.
	forms []*forms
	// usesNamespace is true when some expression reads namespaceObject;
	// otherwise building it (a conversion per evaluation) is skipped.
	usesNamespace bool
	path          Path
}

// Path is how an engine evaluates validating policies' CEL.
type Path string

const (
	// FastPath evaluates every expression with the API server's compiled
	// programs, cost limits and error texts, over inputs converted once per
	// review and variables shared between policies (fastcel.go).
	FastPath Path = "fast"
	// ReferencePath calls the API server's validator for each policy, as
	// its validating admission policy plugin does: the reference the fast
	// path is tested against.
	ReferencePath Path = "reference"
)

// Paths are the evaluation paths an engine offers, by name.
var Paths = []Path{FastPath, ReferencePath}

// EngineOption configures an engine.
type EngineOption func(*Engine)

// WithPath selects the evaluation path (FastPath when not given).
func WithPath(p Path) EngineOption { return func(e *Engine) { e.path = p } }

// NewEngine compiles every policy of set for evaluation.
func NewEngine(set *ir.PolicySet, opts ...EngineOption) (*Engine, error) {
	e := &Engine{set: set, usesNamespace: mentions(set, "namespaceObject"), path: FastPath}
	for _, o := range opts {
		o(e)
	}
	if e.path != FastPath && e.path != ReferencePath {
		return nil, fmt.Errorf("unknown evaluation path %q (want %q or %q)", e.path, FastPath, ReferencePath)
	}
	for i := range set.Policies {
		c, err := celenv.Compile(&set.Policies[i])
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", set.Policies[i].Name, err)
		}
		e.compiled = append(e.compiled, c)
	}
	var err error
	if e.forms, err = newForms(set); err != nil {
		return nil, err
	}
	return e, nil
}

// OnPath returns an engine evaluating the same compiled policies on path p.
func (e *Engine) OnPath(p Path) *Engine {
	c := *e
	c.path = p
	return &c
}

// PolicySet returns the set the engine evaluates.
func (e *Engine) PolicySet() *ir.PolicySet { return e.set }

var objectInterfaces = admission.NewObjectInterfacesFromScheme(k8sruntime.NewScheme())

// typeConverters give ApplyConfiguration mutations the schema of built-in
// kinds (list keys, atomic fields), from the OpenAPI documents client-go
// embeds, as the API server gives them its own.
var typeConverters = patch.NewTypeConverterManager(nil, openapitest.NewEmbeddedFileClient())

// loadSchemas lists the embedded OpenAPI documents once: the manager finds
// a kind's schema only among the paths its Run has listed, and Run with a
// cancelled context lists them once and returns.
var loadSchemas sync.Once

// typeConverter is the type converter of kind's schema.
func typeConverter(kind schema.GroupVersionKind) managedfields.TypeConverter {
	loadSchemas.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		typeConverters.Run(ctx)
	})
	return typeConverters.GetTypeConverter(kind)
}

// evaluation is the per-request state shared by mutation and validation.
type evaluation struct {
	ctx   context.Context
	req   *Request
	state ClusterState
	attr  *admission.VersionedAttributes
	// withNamespace is false when no expression reads namespaceObject, so
	// it is not looked up for CEL.
	withNamespace bool
	// ns is the request's namespace once looked up (nsLoaded).
	ns       *corev1.Namespace
	nsLoaded bool
	match    *matching.Matcher
	// review is what the fast path shares between the review's policies.
	review *reviewState
}

func (e *Engine) newEvaluation(ctx context.Context, req *Request, obj *unstructured.Unstructured) *evaluation {
	ev := newEvaluation(ctx, req, obj)
	ev.withNamespace = e.usesNamespace
	return ev
}

func newEvaluation(ctx context.Context, req *Request, obj *unstructured.Unstructured) *evaluation {
	var object, old k8sruntime.Object
	if obj != nil {
		object = obj
	}
	if req.OldObject != nil {
		old = req.OldObject
	}
	attrs := admission.NewAttributesRecord(object, old, req.Kind, req.Namespace, req.Name, req.Resource,
		req.SubResource, admission.Operation(req.Operation), nil, req.DryRun, req.User)
	return &evaluation{ctx: ctx, req: req, state: req.clusterState(), withNamespace: true, attr: &admission.VersionedAttributes{
		Attributes: attrs, VersionedKind: req.Kind, VersionedObject: object, VersionedOldObject: old,
	}}
}

// namespaceObject is namespaceObject for CEL: the request's namespace, nil
// for a cluster-scoped request and for a Namespace itself (as the API
// server, whose requests for a Namespace carry its name as namespace), and
// nil when no expression reads it. A namespace that cannot be read is nil
// too: an expression reading it fails, and the failure policy decides.
func (ev *evaluation) namespaceObject() *corev1.Namespace {
	if !ev.withNamespace {
		return nil
	}
	if !ev.nsLoaded {
		ev.nsLoaded = true
		if name := ev.req.Namespace; name != "" && ev.req.Kind != namespaceKind {
			ev.ns, _ = ev.state.Namespace(ev.ctx, name)
		}
	}
	return ev.ns
}

var namespaceKind = corev1.SchemeGroupVersion.WithKind("Namespace")

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
	ev := e.newEvaluation(ctx, req, req.Object)
	for i := range e.set.Policies {
		p := &e.set.Policies[i]
		if p.Kind != ir.Validating {
			continue
		}
		if !p.Imported() && !Matches(p, req) {
			res.trace(req.Explain, p, NotMatched, whyNotMatched(p, req))
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var bindings []*ir.Binding
		if p.Imported() {
			// Matched before a form is chosen: an object of another kind
			// never fits a typed policy's schema, and would compile its
			// dynamic form for nothing.
			if bindings = e.matchingBindings(ev, p, res); len(bindings) == 0 {
				continue
			}
		}
		p, c, err := e.form(i, req)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", p.Name, err)
		}
		if p.Imported() {
			e.validateImported(ev, i, p, c, bindings, res)
			continue
		}
		o, detail := e.validateOne(ctx, ev, i, p, c, res)
		res.trace(req.Explain, p, o, detail)
	}
	return res, nil
}

// validateOne evaluates one matching validating policy into res and says
// what it did.
func (e *Engine) validateOne(ctx context.Context, ev *evaluation, i int, p *ir.Policy, c *celenv.CompiledPolicy, res *Result) (Outcome, string) {
	params, err := ev.policyParams(p)
	if err == nil && !paramsFit(p, params) {
		if p, c, err = e.dynamicForm(i); err != nil {
			return Failed, err.Error()
		}
	}
	switch {
	case errors.Is(err, errParamsSkipped):
		return NoParams, err.Error()
	case err != nil && p.FailurePolicy != ir.Ignore:
		res.addViolation(Violation{Policy: p.Name, Actions: []ir.Action{ir.Deny}, Message: err.Error(), Error: true})
		return Violated, paramsDetail(err)
	case err != nil:
		return Failed, paramsDetail(err) + "; ignored by failurePolicy Ignore"
	}
	return record(e.validate(ev, p, c, params), p, "", p.Actions, res)
}

// validate evaluates one validating policy with params on the engine's path.
func (e *Engine) validate(ev *evaluation, p *ir.Policy, c *celenv.CompiledPolicy, params k8sruntime.Object) validating.ValidateResult {
	if p.CEL == ir.CELKyverno {
		return ev.kyvernoValidate(p, c.Programs)
	}
	if e.path == ReferencePath {
		return c.Validator.Validate(ev.ctx, ev.req.Resource, ev.attr, params, ev.namespaceObject(), celconfig.RuntimeCELCostBudget, nil)
	}
	if ev.review == nil {
		ev.review = newReviewState()
	}
	return ev.fastValidate(p, c.Programs, params)
}

// paramsDetail says, for a trace, why a policy's parameter object could
// not be found.
func paramsDetail(err error) string {
	if errors.Is(err, errParamNotFound) {
		return "no parameter object"
	}
	return err.Error()
}

// record adds a validation result of p (through binding, with actions) to
// res and says what the policy did.
func record(out validating.ValidateResult, p *ir.Policy, binding string, actions []ir.Action, res *Result) (Outcome, string) {
	if len(out.Decisions) == 0 {
		return SkippedByConditions, "a matchCondition is false"
	}
	outcome, detail := Passed, ""
	for _, d := range out.Decisions {
		switch {
		case d.Evaluation == validating.EvalDeny:
			res.addViolation(Violation{Policy: p.Name, Binding: binding, Actions: actions, Message: d.Message})
			outcome = Violated
		case d.Evaluation == validating.EvalError && d.Action == validating.ActionDeny:
			res.addViolation(Violation{Policy: p.Name, Binding: binding, Actions: actions, Message: d.Message, Error: true})
			outcome, detail = Violated, "evaluation error"
		case d.Evaluation == validating.EvalError && outcome == Passed:
			outcome, detail = Failed, "evaluation error ignored by failurePolicy Ignore: "+d.Message
		}
	}
	for _, a := range out.AuditAnnotations {
		if a.Action == validating.AuditAnnotationActionPublish {
			res.setAnnotation(p.Name+"."+a.Key, a.Value)
		} else if a.Action == validating.AuditAnnotationActionError {
			res.addViolation(Violation{Policy: p.Name, Binding: binding, Actions: actions, Message: a.Error, Error: true})
			outcome, detail = Violated, "audit annotation error"
		}
	}
	return outcome, detail
}

// validateImported evaluates an imported policy through each of its
// bindings that matches (matchingBindings), with each binding's parameter
// objects, as the API server's validating policy dispatcher does.
func (e *Engine) validateImported(ev *evaluation, i int, p *ir.Policy, c *celenv.CompiledPolicy, bindings []*ir.Binding, res *Result) {
	for _, b := range bindings {
		params, err := ev.bindingParams(p, b)
		if err != nil {
			e.configError(ev, p, b.Name, err, res)
			continue
		}
		if len(params) == 0 {
			res.traceBinding(ev.req.Explain, p, b.Name, NoParams, "binding "+b.Name+": no parameter object; parameterNotFoundAction Allow")
		}
		for _, param := range params {
			p, c := p, c
			if !paramsFit(p, param) {
				if p, c, err = e.dynamicForm(i); err != nil {
					e.configError(ev, p, b.Name, err, res)
					continue
				}
			}
			o, detail := record(e.validate(ev, p, c, param), p, b.Name, b.Actions, res)
			res.traceBinding(ev.req.Explain, p, b.Name, o, joinDetail("binding "+b.Name, detail))
		}
	}
}

// matchingBindings returns the bindings of an imported policy that match
// the request, after its matchConstraints; it traces the ones that do not.
func (e *Engine) matchingBindings(ev *evaluation, p *ir.Policy, res *Result) []*ir.Binding {
	ok, err := ev.matches(p.MatchConstraints)
	if err != nil {
		e.configError(ev, p, "", err, res)
		return nil
	}
	if !ok {
		res.trace(ev.req.Explain, p, NotMatched, "its matchConstraints do not match "+describeRequest(ev.req))
		return nil
	}
	if err := ev.paramKindServed(p); err != nil {
		e.configError(ev, p, "", err, res)
		return nil
	}
	if len(p.Bindings) == 0 {
		res.trace(ev.req.Explain, p, NotMatched, "it has no binding")
	}
	var out []*ir.Binding
	for i := range p.Bindings {
		b := &p.Bindings[i]
		if b.MatchResources != nil {
			ok, err := ev.matches(b.MatchResources)
			if err != nil {
				e.configError(ev, p, b.Name, err, res)
				continue
			}
			if !ok {
				res.traceBinding(ev.req.Explain, p, b.Name, NotMatched, "binding "+b.Name+": its matchResources do not match "+describeRequest(ev.req))
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

func (e *Engine) configError(ev *evaluation, p *ir.Policy, binding string, err error, res *Result) {
	if v, deny := configError(p, binding, err); deny {
		res.addViolation(v)
		res.traceBinding(ev.req.Explain, p, binding, Violated, v.Message)
		return
	}
	res.traceBinding(ev.req.Explain, p, binding, Failed, "ignored by failurePolicy Ignore: "+err.Error())
}

func joinDetail(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

func describeRequest(req *Request) string {
	what := req.Resource.Resource
	if req.SubResource != "" {
		what += "/" + req.SubResource
	}
	return fmt.Sprintf("%s %s %s", req.Operation, what, objectName(req))
}

func objectName(req *Request) string {
	if req.Namespace == "" {
		return req.Name
	}
	return req.Namespace + "/" + req.Name
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
		if !p.Imported() && !Matches(p, req) {
			res.trace(req.Explain, p, NotMatched, whyNotMatched(p, req))
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.Imported() {
			current = e.mutateImported(ctx, req, current, p, e.compiled[i], res)
			continue
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
		res.recordPatch(req.Explain, p, "", current, next)
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
	ev := e.newEvaluation(ctx, req, obj)
	params, err := ev.policyParams(p)
	if errors.Is(err, errParamsSkipped) {
		return obj, err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	return e.runMutations(ctx, ev, obj, p, c, params)
}

// mutateImported runs an imported mutating policy through each binding that
// matches, with each of its parameter objects, and returns the object after.
func (e *Engine) mutateImported(ctx context.Context, req *Request, obj *unstructured.Unstructured, p *ir.Policy, c *celenv.CompiledPolicy, res *Result) *unstructured.Unstructured {
	ev := e.newEvaluation(ctx, req, obj)
	for _, b := range e.matchingBindings(ev, p, res) {
		params, err := ev.bindingParams(p, b)
		if err != nil {
			e.configError(ev, p, b.Name, err, res)
			continue
		}
		for _, param := range params {
			next, skipped, err := e.runMutations(ctx, e.newEvaluation(ctx, req, obj), obj, p, c, param)
			switch {
			case err != nil:
				e.configError(ev, p, b.Name, &mutationError{err}, res)
			case skipped != "":
				res.traceBinding(req.Explain, p, b.Name, SkippedByConditions, joinDetail("binding "+b.Name, skipped))
			default:
				res.recordPatch(req.Explain, p, b.Name, obj, next)
				obj = next
			}
		}
	}
	return obj
}

// recordPatch records what a mutating policy changed from before to after.
func (r *Result) recordPatch(explain bool, p *ir.Policy, binding string, before, after *unstructured.Unstructured) {
	ops, err := Diff(before, after)
	if err != nil || len(ops) == 0 {
		r.traceBinding(explain, p, binding, Unchanged, binding)
		return
	}
	r.Patches = append(r.Patches, PolicyPatch{Policy: p.Name, Ops: ops})
	r.Fired = appendUnique(r.Fired, p.Name)
	r.traceBinding(explain, p, binding, Mutated, joinDetail(fmt.Sprintf("%d patch operation(s)", len(ops)), binding))
}

// runMutations evaluates a mutating policy's match conditions and
// mutations on obj with params; skipped says why it did not run.
func (e *Engine) runMutations(ctx context.Context, ev *evaluation, obj *unstructured.Unstructured, p *ir.Policy, c *celenv.CompiledPolicy, params k8sruntime.Object) (_ *unstructured.Unstructured, skipped string, _ error) {
	if p.CEL == ir.CELKyverno {
		return e.kyvernoMutate(ctx, ev, obj, p, c)
	}
	req := ev.req
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
			Namespace:           ev.namespaceObject(),
			TypeConverter:       typeConverter(req.Kind),
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
