package audit

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/admitc/admitc/ir"
)

// Status is a policy's result on one object, in openreports.io's terms.
type Status string

// The results an audit gives (openreports.io's warn is not one: a
// violation is a fail whatever its binding's actions, as in Kyverno's
// reports; the actions travel with it).
const (
	// Pass: every validation of the policy held.
	Pass Status = "pass"
	// Fail: a validation did not hold.
	Fail Status = "fail"
	// Error: the policy could not be evaluated (an expression failed, a
	// parameter object is missing under parameterNotFoundAction Deny, a
	// selector does not parse).
	Error Status = "error"
	// Skip: the policy selects the object but gives no verdict: it reads
	// what only a request carries, a Kyverno rule skipped it, or no
	// parameter object exists under parameterNotFoundAction Allow.
	Skip Status = "skip"
)

// rank orders statuses from the least to the most severe, for a policy
// evaluated through several parameter objects: the worst decides.
func (s Status) rank() int {
	switch s {
	case Fail:
		return 4
	case Error:
		return 3
	case Skip:
		return 2
	case Pass:
		return 1
	}
	return 0
}

// PolicyResult is one policy's result, through one of its bindings, on one
// object.
type PolicyResult struct {
	// Policy is the IR policy's name.
	Policy string `json:"policy"`
	// Binding names the binding of an imported policy the result is
	// through ("" for a policy in admitc's format, and for an error of the
	// policy itself).
	Binding string `json:"binding,omitempty"`
	// Operation is what the object was judged as: CREATE, or UPDATE (the
	// old object being the object itself) for a policy that matches only
	// UPDATE.
	Operation ir.Operation `json:"operation"`
	Status    Status       `json:"status"`
	// Message is the violation's message, the error, or why it is skipped.
	Message string `json:"message,omitempty"`
	// Actions are the binding's validation actions on a fail or error.
	Actions []ir.Action `json:"actions,omitempty"`
	// Denied says the API server would refuse to write the object again
	// because of this result: its actions hold Deny, or the audit judges
	// every binding as if they did (--as-deny).
	Denied bool `json:"denied,omitempty"`
}

// ObjectResult is the audit of one stored object: one result per policy
// (and binding) that selects it.
type ObjectResult struct {
	// Resource is the resource the object was listed from.
	Resource   schema.GroupVersionResource `json:"-"`
	APIVersion string                      `json:"apiVersion"`
	Kind       string                      `json:"kind"`
	Namespace  string                      `json:"namespace,omitempty"`
	Name       string                      `json:"name"`
	UID        types.UID                   `json:"uid,omitempty"`
	Results    []PolicyResult              `json:"results"`
}

// Denied reports whether the API server would refuse to write the object
// again (see PolicyResult.Denied).
func (o *ObjectResult) Denied() bool {
	return slices.ContainsFunc(o.Results, func(r PolicyResult) bool { return r.Denied })
}

// Failed reports whether some policy failed on the object or could not be
// evaluated.
func (o *ObjectResult) Failed() bool {
	return slices.ContainsFunc(o.Results, func(r PolicyResult) bool { return r.Status == Fail || r.Status == Error })
}

// Ref names the object as kubectl does: Kind namespace/name.
func (o *ObjectResult) Ref() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Sink receives the audit's results, one object at a time, in listing
// order, from one goroutine.
type Sink interface {
	Object(*ObjectResult) error
}

// Sinks fans results out to every sink, in order; the first error stops.
type Sinks []Sink

// Object implements Sink.
func (s Sinks) Object(o *ObjectResult) error {
	for _, sink := range s {
		if err := sink.Object(o); err != nil {
			return err
		}
	}
	return nil
}
