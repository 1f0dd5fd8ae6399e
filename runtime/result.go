package runtime

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/admitc/admitc/ir"
)

// Violation is one failed check of a validating policy (or a failed mutation
// under failurePolicy Fail, which denies).
type Violation struct {
	Policy string `json:"policy"`
	// Binding names the binding of an imported policy that found it.
	Binding string      `json:"binding,omitempty"`
	Actions []ir.Action `json:"actions"`
	Message string      `json:"message"`
	// Error is true when the violation comes from an evaluation error rather
	// than a false expression.
	Error bool `json:"error,omitempty"`
}

// Labelled renders the violation as "[policy] message".
// An imported policy's binding is named when its name is not the policy's.
func (v Violation) Labelled() string {
	if v.Binding != "" && v.Binding != v.Policy {
		return "[" + v.Policy + " (binding " + v.Binding + ")] " + v.Message
	}
	return "[" + v.Policy + "] " + v.Message
}

// has reports whether the violation carries action a.
func (v Violation) has(a ir.Action) bool {
	for _, x := range v.Actions {
		if x == a {
			return true
		}
	}
	return false
}

// PolicyPatch is what one mutating policy changed.
type PolicyPatch struct {
	Policy string    `json:"policy"`
	Ops    []PatchOp `json:"ops"`
}

// Result is the outcome of admitting one request.
type Result struct {
	// Object is the object after all mutations.
	Object *unstructured.Unstructured `json:"-"`
	// Patch turns the request's object into Object.
	Patch []PatchOp `json:"patch,omitempty"`
	// Patches are the changes of each mutating policy, in order.
	Patches    []PolicyPatch `json:"patches,omitempty"`
	Violations []Violation   `json:"violations,omitempty"`
	// AuditAnnotations are published audit annotations (policy.key → value).
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	// Fired names the policies that patched or found a violation.
	Fired []string `json:"fired,omitempty"`
	// Trace is every policy's part in the decision, in evaluation order,
	// when the request asked for it (Request.Explain).
	Trace []PolicyTrace `json:"trace,omitempty"`
}

func (r *Result) addViolation(v Violation) {
	r.Violations = append(r.Violations, v)
	r.Fired = appendUnique(r.Fired, v.Policy)
}

func (r *Result) setAnnotation(k, v string) {
	if r.AuditAnnotations == nil {
		r.AuditAnnotations = map[string]string{}
	}
	r.AuditAnnotations[k] = v
}

// Allowed reports whether no violation denies the request.
func (r *Result) Allowed() bool { return len(r.Denials()) == 0 }

// Denials are the labelled messages of violations with the Deny action.
func (r *Result) Denials() []string { return r.labelled(ir.Deny) }

// Warnings are the labelled messages of violations with the Warn action.
func (r *Result) Warnings() []string { return r.labelled(ir.Warn) }

func (r *Result) labelled(a ir.Action) []string {
	var out []string
	for _, v := range r.Violations {
		if v.has(a) {
			out = append(out, v.Labelled())
		}
	}
	return out
}

// Annotations returns the audit annotations of the response: every published
// auditAnnotation, plus for each policy with Audit violations a JSON list of
// its messages under the policy's name.
func (r *Result) Annotations() map[string]string {
	out := map[string]string{}
	for k, v := range r.AuditAnnotations {
		out[k] = v
	}
	byPolicy := map[string][]string{}
	for _, v := range r.Violations {
		if v.has(ir.Audit) {
			byPolicy[v.Policy] = append(byPolicy[v.Policy], v.Message)
		}
	}
	for p, msgs := range byPolicy {
		b, _ := json.Marshal(msgs)
		out[p] = string(b)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Response renders the result as an admission.k8s.io/v1 AdmissionResponse:
// allowed, a 403 status with the denials joined by "; ", warnings and audit
// annotations. With withPatch, a non-empty JSON Patch is attached.
func (r *Result) Response(uid types.UID, withPatch bool) (*admissionv1.AdmissionResponse, error) {
	resp := &admissionv1.AdmissionResponse{UID: uid, Allowed: true}
	if denials := r.Denials(); len(denials) > 0 {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: strings.Join(denials, "; ")}
	}
	resp.Warnings = r.Warnings()
	resp.AuditAnnotations = r.Annotations()
	if withPatch && resp.Allowed && len(r.Patch) > 0 {
		b, err := json.Marshal(r.Patch)
		if err != nil {
			return nil, fmt.Errorf("encode patch: %w", err)
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = b, &pt
	}
	return resp, nil
}

func mergeAnnotations(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}

func appendUnique(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, x := range list {
			if x == it {
				found = true
				break
			}
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}
