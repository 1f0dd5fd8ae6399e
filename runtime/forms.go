package runtime

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// A policy translated against its kinds' schema (ir.Policy.SchemaReads)
// assumes the shape the API server guarantees of every object it admits.
// Offline (admitc test --no-defaults, verify, audit of an aggregated API)
// an object need not have it, so before trusting the typed form the engine
// checks the object against the reads, and judges an object that does not
// agree by the policy's Dynamic form, which is exact for any shape. A
// request that asks for them (Request.Offline) also gets the policy's
// offline annotations. The other forms are compiled on first use: most
// runs never need them.

// forms are the other compiled forms of one policy.
type forms struct {
	shape *shapeCheck

	dynamicOnce sync.Once
	dynamic     *celenv.CompiledPolicy
	dynamicErr  error

	annotatedOnce sync.Once
	annotated     *ir.Policy
	annotatedC    *celenv.CompiledPolicy
	annotatedErr  error
}

// newForms prepares the other forms of every policy that has one.
func newForms(set *ir.PolicySet) ([]*forms, error) {
	out := make([]*forms, len(set.Policies))
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Dynamic == nil && len(p.OfflineAnnotations) == 0 {
			continue
		}
		f := &forms{}
		if p.Dynamic != nil {
			sc, err := newShapeCheck(p.SchemaReads)
			if err != nil {
				return nil, fmt.Errorf("policy %q: %w", p.Name, err)
			}
			f.shape = sc
		}
		out[i] = f
	}
	return out, nil
}

// form is the policy and compiled form that judge req: the typed form,
// with its offline annotations when req asks for them, or the dynamic form
// when an object of req is not shaped as the typed form assumes.
func (e *Engine) form(i int, req *Request) (*ir.Policy, *celenv.CompiledPolicy, error) {
	p, c := &e.set.Policies[i], e.compiled[i]
	f := e.forms[i]
	if f == nil {
		return p, c, nil
	}
	if p.Dynamic != nil && !f.shape.fits(req) {
		return e.dynamicForm(i)
	}
	if req.Offline && len(p.OfflineAnnotations) > 0 {
		f.annotatedOnce.Do(func() {
			q := *p
			q.AuditAnnotations = append(append([]ir.AuditAnnotation(nil), p.AuditAnnotations...), p.OfflineAnnotations...)
			f.annotated = &q
			f.annotatedC, f.annotatedErr = celenv.Compile(&q)
		})
		return f.annotated, f.annotatedC, f.annotatedErr
	}
	return p, c, nil
}

// dynamicForm is policy i's dynamic form, compiled on first use.
func (e *Engine) dynamicForm(i int) (*ir.Policy, *celenv.CompiledPolicy, error) {
	p, f := &e.set.Policies[i], e.forms[i]
	f.dynamicOnce.Do(func() { f.dynamic, f.dynamicErr = celenv.CompileUnchecked(p.Dynamic) })
	return p.Dynamic, f.dynamic, f.dynamicErr
}

// paramsFit says whether params, the parameter object of p, is shaped as
// p's typed form assumes: a ConfigMap (a Kyverno configMap context entry
// read as params) whose data are strings, as the API server keeps them.
// Offline a test's ConfigMap need not be; p's dynamic form judges it then
// (true for a policy without a typed form, or params of another kind).
func paramsFit(p *ir.Policy, params k8sruntime.Object) bool {
	if p.Dynamic == nil || p.ParamKind == nil || p.ParamKind.APIVersion != "v1" || p.ParamKind.Kind != "ConfigMap" {
		return true
	}
	u, ok := params.(*unstructured.Unstructured)
	if !ok {
		return true
	}
	data, found := u.Object["data"]
	if !found {
		return true
	}
	m, ok := data.(map[string]any)
	if !ok {
		return false
	}
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// fits says whether the request's object and old object are shaped as
// the reads assume.
func (s *shapeCheck) fits(req *Request) bool {
	for _, obj := range []map[string]any{objectOf(req.Object), objectOf(req.OldObject)} {
		if obj != nil && !s.root.fits(obj) {
			return false
		}
	}
	return true
}

// FitsSchema says whether req's objects are shaped as p's SchemaReads
// assume, so that p's typed form judges them (true for a policy without
// a typed form).
func FitsSchema(p *ir.Policy, req *Request) (bool, error) {
	if p.Dynamic == nil {
		return true, nil
	}
	s, err := newShapeCheck(p.SchemaReads)
	if err != nil {
		return false, err
	}
	return s.fits(req), nil
}
