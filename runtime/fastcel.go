package runtime

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/admitc/admitc/internal/celenv"
)

// The fast path's CEL evaluation: the API server's activation and
// composition semantics (k8s.io/apiserver/pkg/admission/plugin/cel,
// activation.go, condition.go, composition.go), with what does not change
// within one review computed once and shared:
//
//   - the request, namespace and parameter objects are converted to
//     unstructured once per review, not once per expression list;
//   - a variable's value and cost are computed once per review and input,
//     and shared by every policy, binding and expression list that has the
//     same variable (celenv.Variable.Key). Each expression list still pays
//     the variable's cost, and the cost of the variables it read, the first
//     time it reads it, exactly as the API server's per-list lazy
//     evaluation does, so cost budgets run out exactly where they would.

// reviewState is what one review's evaluations share.
type reviewState struct {
	requests map[requestKey]map[string]any
	objects  map[k8sruntime.Object]any
	inputs   map[inputsKey]*celInputs
	vars     map[varKey]*sharedVar
}

type requestKey struct {
	gvr metav1.GroupVersionResource
	gvk metav1.GroupVersionKind
}

// nsFlavor says which namespace object an expression list sees: none (match
// conditions), the API server's stripped copy (validations, messages) or
// the namespace as read (audit annotations, as the upstream validator
// passes it).
type nsFlavor int

const (
	nsNone nsFlavor = iota
	nsStripped
	nsFull
)

type inputsKey struct {
	req    requestKey
	params k8sruntime.Object
	ns     nsFlavor
}

// celInputs are the values of an activation's top-level variables; two
// activations with the same *celInputs evaluate every expression alike.
type celInputs struct {
	object, oldObject, params, request, namespace any
}

type varKey struct {
	in  *celInputs
	key string
}

// sharedVar is a variable evaluated once for an input: its value, its own
// cost, and the variables its evaluation read.
type sharedVar struct {
	val  ref.Val
	cost int64
	deps []string
}

func newReviewState() *reviewState {
	return &reviewState{
		requests: map[requestKey]map[string]any{},
		objects:  map[k8sruntime.Object]any{},
		inputs:   map[inputsKey]*celInputs{},
		vars:     map[varKey]*sharedVar{},
	}
}

// celInputs returns the shared inputs of an activation.
func (ev *evaluation) celInputs(rk requestKey, params k8sruntime.Object, flavor nsFlavor) (*celInputs, error) {
	st := ev.review
	var ns *corev1.Namespace
	if flavor != nsNone {
		ns = ev.namespaceObject()
		if ns == nil {
			flavor = nsNone
		}
	}
	k := inputsKey{req: rk, params: params, ns: flavor}
	if in, ok := st.inputs[k]; ok {
		return in, nil
	}
	in := &celInputs{}
	var err error
	if in.oldObject, err = st.toUnstructured(ev.attr.VersionedOldObject); err != nil {
		return nil, fmt.Errorf("failed to prepare oldObject variable for evaluation: %w", err)
	}
	if in.object, err = st.toUnstructured(ev.attr.VersionedObject); err != nil {
		return nil, fmt.Errorf("failed to prepare object variable for evaluation: %w", err)
	}
	if params != nil {
		if in.params, err = st.toUnstructured(params); err != nil {
			return nil, fmt.Errorf("failed to prepare params variable for evaluation: %w", err)
		}
	}
	if in.request, err = ev.requestValue(rk); err != nil {
		return nil, fmt.Errorf("failed to prepare request variable for evaluation: %w", err)
	}
	if flavor == nsStripped {
		ns = plugincel.CreateNamespaceObject(ns)
	}
	if ns != nil {
		if in.namespace, err = k8sruntime.DefaultUnstructuredConverter.ToUnstructured(ns); err != nil {
			return nil, fmt.Errorf("failed to prepare namespace variable for evaluation: %w", err)
		}
	}
	st.inputs[k] = in
	return in, nil
}

// toUnstructured is the upstream objectToResolveVal, once per object.
func (st *reviewState) toUnstructured(obj k8sruntime.Object) (any, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	if v, ok := st.objects[obj]; ok {
		return v, nil
	}
	u, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	st.objects[obj] = u
	return u, nil
}

// requestValue is the "request" variable for the resource and kind the
// request matched as, as plugincel.CreateAdmissionRequest builds it.
func (ev *evaluation) requestValue(rk requestKey) (map[string]any, error) {
	if r, ok := ev.review.requests[rk]; ok {
		return r, nil
	}
	req := plugincel.CreateAdmissionRequest(ev.attr.Attributes, rk.gvr, rk.gvk)
	r, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(req)
	if err != nil {
		return nil, err
	}
	ev.review.requests[rk] = r
	return r, nil
}

// celScope is one expression list's evaluation: the API server's
// composition context, in which each variable is read at most once and its
// cost accumulates until the next expression's accounting.
type celScope struct {
	ctx    context.Context
	review *reviewState
	progs  *celenv.Programs
	in     *celInputs
	act    *celActivation
	values map[string]ref.Val
	cost   int64
	// evaluating is the stack of variables being evaluated, innermost last.
	evaluating []*sharedVar
}

func (ev *evaluation) newScope(progs *celenv.Programs, in *celInputs) *celScope {
	s := &celScope{ctx: ev.ctx, review: ev.review, progs: progs, in: in}
	s.act = &celActivation{in: in}
	s.act.variables = &variablesValue{typ: progs.VariablesType, scope: s}
	return s
}

// forInput is plugincel's condition.ForInput in this scope.
func (s *celScope) forInput(results []plugincel.CompilationResult, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	out := make([]plugincel.EvaluationResult, len(results))
	remaining := budget
	for i := range results {
		var err error
		out[i], remaining, err = s.evaluate(&results[i], remaining)
		if err != nil {
			return nil, -1, err
		}
	}
	return out, remaining, nil
}

// evaluate is plugincel's evaluationActivation.Evaluate, error texts included.
func (s *celScope) evaluate(r *plugincel.CompilationResult, remaining int64) (plugincel.EvaluationResult, int64, error) {
	var out plugincel.EvaluationResult
	if r.ExpressionAccessor == nil {
		return out, remaining, nil
	}
	out.ExpressionAccessor = r.ExpressionAccessor
	if r.Error != nil {
		out.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("compilation error: %v", r.Error), Cause: r.Error}
		return out, remaining, nil
	}
	if r.Program == nil {
		out.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "unexpected internal error compiling expression"}
		return out, remaining, nil
	}
	val, details, err := r.Program.ContextEval(s.ctx, s.act)
	composition := s.cost
	s.cost = 0
	if composition > remaining {
		return out, -1, outOfBudget()
	}
	remaining -= composition
	if details == nil {
		return out, -1, &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", r.ExpressionAccessor.GetExpression())}
	}
	rtCost := details.ActualCost()
	if rtCost == nil {
		return out, -1, &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", r.ExpressionAccessor.GetExpression()), Cause: apiservercel.ErrOutOfBudget}
	}
	if *rtCost > math.MaxInt64 || int64(*rtCost) > remaining {
		return out, -1, outOfBudget()
	}
	remaining -= int64(*rtCost)
	if err != nil {
		out.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("expression '%v' resulted in error: %v", r.ExpressionAccessor.GetExpression(), err)}
	} else {
		out.EvalResult = val
	}
	return out, remaining, nil
}

func outOfBudget() error {
	return &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: "validation failed due to running out of cost budget, no further validation rules will be run", Cause: apiservercel.ErrOutOfBudget}
}

// variable reads a variable in this scope: evaluated (or taken from the
// review's share) the first time, its cost, and the cost of the variables
// it read, added to the scope's accumulated cost.
func (s *celScope) variable(i int) ref.Val {
	v := &s.progs.Variables[i]
	if n := len(s.evaluating); n > 0 {
		s.evaluating[n-1].deps = append(s.evaluating[n-1].deps, v.Name)
	}
	if val, ok := s.values[v.Name]; ok {
		return val
	}
	if s.values == nil {
		s.values = make(map[string]ref.Val, len(s.progs.Variables))
	}
	k := varKey{in: s.in, key: v.Key}
	shared, ok := s.review.vars[k]
	if ok {
		s.values[v.Name] = shared.val
		s.cost += shared.cost
		for _, d := range shared.deps {
			s.variable(s.progs.VariableIndex(d))
		}
		return shared.val
	}
	shared = &sharedVar{}
	s.evaluating = append(s.evaluating, shared)
	shared.val, shared.cost = s.evaluateVariable(v)
	s.evaluating = s.evaluating[:len(s.evaluating)-1]
	s.review.vars[k] = shared
	s.values[v.Name] = shared.val
	s.cost += shared.cost
	return shared.val
}

// evaluateVariable is the upstream composition's variable callback.
func (s *celScope) evaluateVariable(v *celenv.Variable) (ref.Val, int64) {
	if v.Result.Error != nil {
		return types.NewErr("composited variable %q fails to compile: %v", v.Name, v.Result.Error), 0
	}
	val, details, err := v.Result.Program.ContextEval(s.ctx, s.act)
	if details == nil {
		return types.NewErr("unable to get evaluation details of variable %q", v.Name), 0
	}
	costPtr := details.ActualCost()
	if costPtr == nil {
		return types.NewErr("unable to calculate cost of variable %q", v.Name), 0
	}
	cost := int64(math.MaxInt64)
	if *costPtr <= math.MaxInt64 {
		cost = int64(*costPtr)
	}
	if err != nil && s.act.kyverno != nil {
		// Kyverno's lazy variables return the program's error as it is.
		return types.WrapErr(err), cost
	}
	if err != nil {
		return types.NewErr("composited variable %q fails to evaluate: %v", v.Name, err), cost
	}
	return val, cost
}

// celActivation is plugincel's evaluationActivation without an authorizer
// (admitc evaluates without one, as the API server does when none is set).
type celActivation struct {
	in        *celInputs
	variables ref.Val
	// kyverno holds the variables of Kyverno's dialect (nil in the API
	// server's).
	kyverno *kyvernoVars
}

var _ interpreter.Activation = (*celActivation)(nil)

// ResolveName implements interpreter.Activation.
func (a *celActivation) ResolveName(name string) (any, bool) {
	switch name {
	case plugincel.ObjectVarName:
		return a.in.object, true
	case plugincel.OldObjectVarName:
		return a.in.oldObject, true
	case plugincel.ParamsVarName:
		return a.in.params, true
	case plugincel.RequestVarName:
		return a.in.request, true
	case plugincel.NamespaceVarName:
		return a.in.namespace, true
	case plugincel.VariableVarName:
		return a.variables, true
	}
	if a.kyverno != nil {
		return a.kyverno.resolve(name)
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *celActivation) Parent() interpreter.Activation { return nil }

// variablesValue is the "variables" object of a scope: lazy.MapValue's
// behaviour, reading through the scope so shared values are accounted.
type variablesValue struct {
	typ   *types.Type
	scope *celScope
}

var (
	_ ref.Val       = (*variablesValue)(nil)
	_ traits.Mapper = (*variablesValue)(nil)
)

// Find implements traits.Mapper.
func (m *variablesValue) Find(key ref.Val) (ref.Val, bool) {
	n, ok := key.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(n), true
	}
	name, ok := apiservercel.Unescape(string(n))
	if !ok {
		return nil, false
	}
	i := m.scope.progs.VariableIndex(name)
	if i < 0 {
		return nil, false
	}
	return m.scope.variable(i), true
}

// Get implements traits.Mapper.
func (m *variablesValue) Get(key ref.Val) ref.Val {
	if v, found := m.Find(key); found {
		return v
	}
	return types.ValOrErr(key, "no such key: %v", key)
}

// Contains implements traits.Container.
func (m *variablesValue) Contains(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if v != nil && types.IsUnknownOrError(v) {
		return v
	}
	return types.Bool(found)
}

// Iterator implements traits.Iterable.
func (m *variablesValue) Iterator() traits.Iterator {
	return &variablesIterator{parent: m}
}

// Size implements traits.Sizer.
func (m *variablesValue) Size() ref.Val { return types.Int(len(m.scope.progs.Variables)) }

// ConvertToNative implements ref.Val.
func (m *variablesValue) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion from %q to %q", m.typ.TypeName(), typeDesc.Name())
}

// ConvertToType implements ref.Val.
func (m *variablesValue) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case m.typ:
		return m
	case types.TypeType:
		return m.typ
	}
	return types.NewErr("disallowed conversion from %q to %q", m.typ.TypeName(), typeVal.TypeName())
}

// Equal implements ref.Val.
func (m *variablesValue) Equal(other ref.Val) ref.Val {
	o, ok := other.(*variablesValue)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(m == o)
}

// Type implements ref.Val.
func (m *variablesValue) Type() ref.Type { return m.typ }

// Value implements ref.Val.
func (m *variablesValue) Value() any { return types.NoSuchOverloadErr() }

// variablesIterator is lazy.MapValue's iterator, which yields the values
// of the variables (not their names).
type variablesIterator struct {
	parent *variablesValue
	index  int
}

func (i *variablesIterator) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("disallowed conversion to %q", typeDesc.Name())
}

func (i *variablesIterator) ConvertToType(typeValue ref.Type) ref.Val {
	return types.NewErr("disallowed conversion o %q", typeValue.TypeName())
}

func (i *variablesIterator) Equal(other ref.Val) ref.Val {
	o, ok := other.(*variablesIterator)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(o == i)
}

func (i *variablesIterator) Type() ref.Type { return types.IteratorType }

func (i *variablesIterator) Value() any { return nil }

func (i *variablesIterator) HasNext() ref.Val {
	return types.Bool(i.index < len(i.parent.scope.progs.Variables))
}

func (i *variablesIterator) Next() ref.Val {
	ret := i.parent.Get(types.String(i.parent.scope.progs.Variables[i.index].Name))
	i.index++
	return ret
}
