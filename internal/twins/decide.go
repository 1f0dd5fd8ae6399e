package twins

import (
	"context"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/runtime"
)

// Verdict is what admission does with a request.
type Verdict string

const (
	// Allowed: no violation.
	Allowed Verdict = "allowed"
	// Denied: a violation with the Deny action.
	Denied Verdict = "denied"
	// Audited: violations, none of which denies (Audit or Warn only).
	Audited Verdict = "audited"
)

// Decision is admitc's runtime's answer to the CREATE of one resource.
type Decision struct {
	Verdict Verdict
	// Messages are the violations, labelled with their policy, sorted.
	Messages []string
}

// DefaultNamespace is the namespace of a namespaced resource that names
// none, as in kyverno test.
const DefaultNamespace = "default"

// Request is the CREATE of obj in its namespace (DefaultNamespace when
// it names none), with the parameter objects params.
func Request(obj *unstructured.Unstructured, params []*unstructured.Unstructured) *runtime.Request {
	req := runtime.RequestFor(obj, nil, DefaultNamespace)
	req.Params = params
	return req
}

// Decide admits the CREATE of obj with engine e.
func Decide(ctx context.Context, e *runtime.Engine, obj *unstructured.Unstructured, params []*unstructured.Unstructured) (Decision, error) {
	res, err := e.Admit(ctx, Request(obj, params))
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Verdict: Allowed}
	for _, v := range res.Violations {
		d.Messages = append(d.Messages, v.Labelled())
	}
	sort.Strings(d.Messages)
	switch {
	case !res.Allowed():
		d.Verdict = Denied
	case len(res.Violations) > 0:
		d.Verdict = Audited
	}
	return d, nil
}

// String is the verdict and the messages, one per line.
func (d Decision) String() string {
	if len(d.Messages) == 0 {
		return string(d.Verdict)
	}
	return string(d.Verdict) + ":\n  " + strings.Join(d.Messages, "\n  ")
}

// ResourceName is kind/namespace/name, as kyverno test names resources.
func ResourceName(o *unstructured.Unstructured) string {
	ns := o.GetNamespace()
	if ns == "" {
		ns = DefaultNamespace
	}
	return o.GetKind() + "/" + ns + "/" + o.GetName()
}
