package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/admitc/admitc/ir"
)

// Outcome is what one policy did with one request, for --explain.
type Outcome string

const (
	// NotMatched: the request's resource or operation is not the policy's.
	NotMatched Outcome = "not-matched"
	// SkippedByConditions: the policy's matchConditions were not all true.
	SkippedByConditions Outcome = "skipped"
	// NoParams: no parameter object, and parameterNotFoundAction Allow.
	NoParams Outcome = "no-params"
	// Passed: every validation held.
	Passed Outcome = "passed"
	// Violated: a validation failed (or erred under failurePolicy Fail).
	Violated Outcome = "violated"
	// Mutated: the policy changed the object.
	Mutated Outcome = "mutated"
	// Unchanged: the policy ran and changed nothing.
	Unchanged Outcome = "unchanged"
	// Failed: the policy could not be evaluated (an error it ignored or
	// turned into a denial, by its failure policy).
	Failed Outcome = "error"
)

// PolicyTrace is one policy's part in a decision.
type PolicyTrace struct {
	Policy string `json:"policy"`
	// Binding names the binding of an imported policy the outcome is
	// through; empty for a policy in admitc's own format and for what an
	// imported policy decided before any binding (its matchConstraints).
	Binding string  `json:"binding,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Detail says why, when the outcome alone does not.
	Detail string `json:"detail,omitempty"`
}

func (r *Result) trace(on bool, p *ir.Policy, o Outcome, detail string) {
	r.traceBinding(on, p, "", o, detail)
}

// traceBinding records an outcome of p through its binding.
func (r *Result) traceBinding(on bool, p *ir.Policy, binding string, o Outcome, detail string) {
	if on {
		r.Trace = append(r.Trace, PolicyTrace{Policy: p.Name, Binding: binding, Outcome: o, Detail: detail})
	}
}

// whyNotMatched explains why Matches(p, req) is false.
func whyNotMatched(p *ir.Policy, req *Request) string {
	if !hasOperation(p.Match.Operations, req.Operation) {
		return fmt.Sprintf("operation %s is not one of %s", req.Operation, joinOps(p.Match.Operations))
	}
	what := req.Resource.Resource
	if req.SubResource != "" {
		what += "/" + req.SubResource
	}
	var names []string
	for _, r := range p.Match.Resources {
		if !r.SubresourcesOnly {
			names = append(names, r.Resource)
		}
		for _, s := range r.Subresources {
			names = append(names, r.Resource+"/"+s)
		}
	}
	return fmt.Sprintf("%s (%s) is not one of the resources it matches: %s", what, req.Kind.Kind, strings.Join(names, ", "))
}

func joinOps(ops []ir.Operation) string {
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = string(o)
	}
	return strings.Join(parts, ", ")
}

// MatchesAnyResource reports whether some policy of the set matches the
// request's resource (whatever the operation): false means no loaded policy
// can judge such an object, which usually means a misspelt kind.
func (e *Engine) MatchesAnyResource(req *Request) bool {
	for i := range e.set.Policies {
		if p := &e.set.Policies[i]; p.Imported() && rulesNameResource(p.MatchConstraints.ResourceRules, req) {
			return true
		}
		for _, r := range e.set.Policies[i].Match.Resources {
			if r.Group == req.Resource.Group && r.Resource == req.Resource.Resource {
				return true
			}
		}
	}
	return false
}

// rulesNameResource reports whether some rule names the request's group and
// resource, directly or by wildcard.
func rulesNameResource(rules []ir.ResourceRule, req *Request) bool {
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, "*") && !slices.Contains(r.APIGroups, req.Resource.Group) {
			continue
		}
		for _, res := range r.Resources {
			name, _, _ := strings.Cut(res, "/")
			if name == "*" || name == req.Resource.Resource {
				return true
			}
		}
	}
	return false
}
