package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// Options configure an audit.
type Options struct {
	// AsDeny judges every binding as if its actions were [Deny]: what would
	// break once every policy is enforced.
	AsDeny bool
	// Workers is how many objects are judged at once (0: GOMAXPROCS).
	Workers int
	// Path is the engine's evaluation path (default runtime.FastPath).
	Path runtime.Path
	// Namespaces scope the policies in admitc's own format as `admitc
	// compile --namespace` scopes their bindings: these namespaces, or,
	// with none given, every namespace but kube-system. Imported policies
	// carry their own bindings.
	Namespaces []string
}

// Auditor judges stored objects with one policy set, through the runtime
// the webhook runs. It is safe for concurrent use.
type Auditor struct {
	set      *ir.PolicySet
	opts     Options
	policies []*Policy
	byName   map[string]*Policy

	mu sync.Mutex
	// engines judge each resource, made when its first object is judged.
	engines map[schema.GroupResource]*resourceEngines
}

// resourceEngines judge the objects of one resource with the policies
// that may match it: create as a CREATE, with the policies judged so;
// update as an UPDATE (the old object being the object itself) with the
// policies that match only UPDATE (nil when there are none). Both run the
// mutating policies first, as the API server does.
type resourceEngines struct {
	once           sync.Once
	create, update *runtime.Engine
	err            error
}

// New prepares set's policies for auditing. Each resource's engine is
// compiled when its first object is judged, with the policies that may
// match it: a resource with no object costs nothing.
func New(set *ir.PolicySet, opts Options) (*Auditor, error) {
	if opts.Path == "" {
		opts.Path = runtime.FastPath
	}
	if _, err := runtime.NewEngine(&ir.PolicySet{}, runtime.WithPath(opts.Path)); err != nil {
		return nil, err
	}
	a := &Auditor{set: set, opts: opts, policies: newPolicies(set), byName: map[string]*Policy{}, engines: map[schema.GroupResource]*resourceEngines{}}
	for _, p := range a.policies {
		a.byName[p.IR.Name] = p
	}
	return a, nil
}

// enginesFor returns the engines of t's resource, compiling them once.
func (a *Auditor) enginesFor(t Target) (*resourceEngines, error) {
	a.mu.Lock()
	e, ok := a.engines[t.Resource.GroupResource()]
	if !ok {
		e = &resourceEngines{}
		a.engines[t.Resource.GroupResource()] = e
	}
	a.mu.Unlock()
	e.once.Do(func() {
		if e.create, e.err = a.engine(t, ir.Create); e.err == nil {
			e.update, e.err = a.engine(t, ir.Update)
		}
	})
	return e, e.err
}

// engine compiles the mutating policies that may match t and the
// validating ones judged as op; nil when no validating policy is.
func (a *Auditor) engine(t Target, op ir.Operation) (*runtime.Engine, error) {
	sub := &ir.PolicySet{Version: a.set.Version}
	validating := 0
	for i := range a.set.Policies {
		p := &a.set.Policies[i]
		if !mayMatch(p, t) {
			continue
		}
		if pol, ok := a.byName[p.Name]; ok {
			if pol.Operation != op {
				continue
			}
			validating++
		}
		sub.Policies = append(sub.Policies, *p)
	}
	if validating == 0 {
		return nil, nil
	}
	return runtime.NewEngine(sub, runtime.WithPath(a.opts.Path))
}

// ForgetEngines drops the engines compiled so far; a later Run compiles
// them again. A one-off audit calls it once its run is over, so writing
// the outputs does not hold them.
func (a *Auditor) ForgetEngines() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.engines = map[schema.GroupResource]*resourceEngines{}
}

// Policies are the set's validating policies, in order, with how each
// judges stored objects.
func (a *Auditor) Policies() []*Policy { return a.policies }

// Judge audits one stored object of t with the cluster's namespaces and
// parameter objects from state.
func (a *Auditor) Judge(ctx context.Context, t Target, obj *unstructured.Unstructured, state runtime.ClusterState) (*ObjectResult, error) {
	if obj.GetKind() == "" {
		obj.SetGroupVersionKind(t.Resource.GroupVersion().WithKind(t.Kind))
	}
	out := &ObjectResult{Resource: t.Resource, APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(),
		Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
	engines, err := a.enginesFor(t)
	if err != nil {
		return nil, err
	}
	for _, run := range []struct {
		engine *runtime.Engine
		op     ir.Operation
	}{{engines.create, ir.Create}, {engines.update, ir.Update}} {
		if run.engine == nil {
			continue
		}
		res, err := run.engine.Admit(ctx, storedRequest(t, obj, run.op, state))
		if err != nil {
			return nil, err
		}
		out.Results = append(out.Results, a.results(res, run.op)...)
	}
	if !a.inScope(t, obj) {
		out.Results = slices.DeleteFunc(out.Results, func(r PolicyResult) bool { return !a.byName[r.Policy].IR.Imported() })
	}
	return out, nil
}

// inScope says whether the bindings emitted for policies in admitc's own
// format select obj (backends.NamespaceSelector): its namespace, or for a
// Namespace its own name, is one of Options.Namespaces, or, with none,
// not kube-system. Other cluster-scoped objects are always selected, as a
// namespace selector selects them.
func (a *Auditor) inScope(t Target, obj *unstructured.Unstructured) bool {
	name := obj.GetNamespace()
	switch {
	case t.Resource.Group == "" && t.Resource.Resource == "namespaces":
		name = obj.GetName()
	case !t.Namespaced:
		return true
	}
	if len(a.opts.Namespaces) == 0 {
		return name != "kube-system"
	}
	return slices.Contains(a.opts.Namespaces, name)
}

// storedRequest is the request a stored object is judged by: a write of
// the object as it is stored, by no one in particular.
func storedRequest(t Target, obj *unstructured.Unstructured, op ir.Operation, state runtime.ClusterState) *runtime.Request {
	req := &runtime.Request{
		UID: "admitc-audit", Kind: obj.GroupVersionKind(), Resource: t.Resource, Operation: op,
		Name: obj.GetName(), Object: obj, Cluster: state, User: &user.DefaultInfo{}, Explain: true,
	}
	if t.Namespaced {
		req.Namespace = obj.GetNamespace()
	}
	if op == ir.Update {
		req.OldObject = obj
	}
	return req
}

// traceKey is one policy through one binding.
type traceKey struct{ policy, binding string }

// results turns the engine's trace of one request into one result per
// validating policy and binding that selected the object.
func (a *Auditor) results(res *runtime.Result, op ir.Operation) []PolicyResult {
	var order []traceKey
	byKey := map[traceKey]*PolicyResult{}
	for _, t := range res.Trace {
		pol, ok := a.byName[t.Policy]
		if !ok || t.Outcome == runtime.NotMatched {
			continue
		}
		key := traceKey{t.Policy, t.Binding}
		r := a.result(res, pol, t, op)
		if r == nil {
			continue
		}
		if prev, ok := byKey[key]; ok {
			if r.Status.rank() > prev.Status.rank() {
				*prev = *r
			}
			continue
		}
		order = append(order, key)
		byKey[key] = r
	}
	out := make([]PolicyResult, 0, len(order))
	for _, k := range order {
		r := *byKey[k]
		if r.Binding == r.Policy {
			r.Binding = "" // the one binding of a translated policy
		}
		out = append(out, r)
	}
	return out
}

// result is the result of one trace entry, nil when the policy does not
// select the object after all (a false match condition, a Kyverno foreach
// rule that validated no element).
func (a *Auditor) result(res *runtime.Result, pol *Policy, t runtime.PolicyTrace, op ir.Operation) *PolicyResult {
	r := &PolicyResult{Policy: t.Policy, Binding: t.Binding, Operation: op}
	if pol.Skip != "" {
		r.Status, r.Message = Skip, pol.Skip
		return r
	}
	switch t.Outcome {
	case runtime.SkippedByConditions:
		return nil
	case runtime.NoParams:
		r.Status, r.Message = Skip, "no parameter object (parameterNotFoundAction Allow)"
	case runtime.Failed:
		r.Status, r.Message = Error, t.Detail
	case runtime.Violated:
		a.violated(res, r)
	default:
		return kyvernoOutcome(res, pol, r)
	}
	return r
}

// violated fills r from the violations of its policy and binding.
func (a *Auditor) violated(res *runtime.Result, r *PolicyResult) {
	r.Status = Error
	var msgs []string
	for _, v := range res.Violations {
		if v.Policy != r.Policy || v.Binding != r.Binding {
			continue
		}
		if !v.Error {
			r.Status = Fail
		}
		msgs = append(msgs, v.Message)
		r.Actions = v.Actions
		r.Denied = r.Denied || a.opts.AsDeny || slices.Contains(v.Actions, ir.Deny)
	}
	r.Message = strings.Join(msgs, "; ")
}

// kyvernoOutcome is a passed policy's result: a pass, or what a Kyverno
// rule published about it (a skip of its pattern, no element of a foreach
// validated: no result, as Kyverno's engine gives none).
func kyvernoOutcome(res *runtime.Result, pol *Policy, r *PolicyResult) *PolicyResult {
	r.Status = Pass
	if pol.IR.From == nil || pol.IR.From.Rule == "" {
		return r
	}
	if _, none := res.AuditAnnotations[pol.IR.Name+"."+kyverno.NoResponseAnnotation]; none {
		return nil
	}
	if why, ok := res.AuditAnnotations[pol.IR.Name+"."+kyverno.SkipAnnotation]; ok {
		r.Status, r.Message = Skip, why
	}
	return r
}

// String is a one-line account of the result, for logs and tests.
func (r PolicyResult) String() string {
	s := fmt.Sprintf("%s %s", r.Status, r.Policy)
	if r.Binding != "" && r.Binding != r.Policy {
		s += " (binding " + r.Binding + ")"
	}
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}
