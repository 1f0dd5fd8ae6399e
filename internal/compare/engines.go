package compare

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/internal/upstream"
	"github.com/admitc/admitc/runtime"
)

// Admitc is admitc's runtime: the code `admitc test` and the webhook run.
type Admitc struct {
	Engine *runtime.Engine
	Params []*unstructured.Unstructured
	// NamespaceLabels gives namespaceObject labels by namespace name.
	NamespaceLabels map[string]map[string]string
}

// Name implements Engine.
func (Admitc) Name() string { return "admitc" }

// Admit implements Engine.
func (a Admitc) Admit(ctx context.Context, obj *unstructured.Unstructured, namespace string) (Result, error) {
	req := runtime.RequestFor(obj, nil, namespace)
	req.Params = a.Params
	req.NamespaceLabels = a.NamespaceLabels[req.Namespace]
	res, err := a.Engine.Admit(ctx, req)
	if err != nil {
		return Result{}, err
	}
	r := Result{Engine: "admitc", Verdict: Allowed, Object: res.Object, Mutated: len(res.Patch) > 0}
	switch {
	case !res.Allowed():
		r.Verdict, r.Messages = Denied, res.Denials()
	case len(res.Warnings()) > 0:
		r.Verdict, r.Messages = Warned, res.Warnings()
	}
	return r, nil
}

// Upstream is the API server's validating and mutating policy plugins, run
// in-process on the generated ValidatingAdmissionPolicies and
// MutatingAdmissionPolicies.
type Upstream struct{ Engine *upstream.Engine }

// Name implements Engine.
func (Upstream) Name() string { return "kubernetes" }

// Admit implements Engine.
func (u Upstream) Admit(ctx context.Context, obj *unstructured.Unstructured, namespace string) (Result, error) {
	// The object as the API server hands it to admission (its namespace
	// filled in), so that only the policies' changes count as mutations.
	before := runtime.RequestFor(obj.DeepCopy(), nil, namespace).Object
	d, err := u.Engine.Admit(ctx, obj, namespace)
	if err != nil {
		return Result{}, err
	}
	r := Result{Engine: "kubernetes", Verdict: Allowed, Object: d.Object, Mutated: !sameObject(before, d.Object)}
	switch {
	case !d.Allowed:
		r.Verdict, r.Messages = Denied, []string{d.Message}
	case len(d.Warnings) > 0:
		r.Verdict, r.Messages = Warned, sortedCopy(d.Warnings)
	}
	return r, nil
}
