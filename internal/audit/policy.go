package audit

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// Policy is one validating policy of the audited set, and how the audit
// judges stored objects with it.
type Policy struct {
	IR *ir.Policy
	// Operation is what a stored object is judged as: CREATE, as Kyverno's
	// background scans judge it, or UPDATE (the old object being the object
	// itself) when the policy matches UPDATE and not CREATE; empty when the
	// policy judges no stored object (NotAudited says why).
	Operation ir.Operation
	// Skip says why each of the policy's results is a skip: it reads what
	// only an admission request carries. Empty otherwise.
	Skip string
	// NotAudited says why the policy judges no stored object; empty when
	// it does.
	NotAudited string
}

// Name is the policy's name in its own engine's terms: a Kyverno policy's
// name (namespace/name for a namespaced one), else the IR policy's name.
func (p *Policy) Name() string {
	if f := p.IR.From; f != nil && f.Name != "" {
		if f.Namespace != "" {
			return f.Namespace + "/" + f.Name
		}
		return f.Name
	}
	return p.IR.Name
}

// Rule is the Kyverno rule the policy was read from, or "".
func (p *Policy) Rule() string {
	if f := p.IR.From; f != nil {
		return f.Rule
	}
	return ""
}

// Severity is the policy's policies.kyverno.io/severity annotation, or "".
func (p *Policy) Severity() string {
	if f := p.IR.From; f != nil {
		return f.Severity
	}
	return ""
}

// Category is the policy's policies.kyverno.io/category annotation, or "".
func (p *Policy) Category() string {
	if f := p.IR.From; f != nil {
		return f.Category
	}
	return ""
}

// Title names the policy and its rule for tables: NAME, or NAME/RULE.
func (p *Policy) Title() string {
	if r := p.Rule(); r != "" {
		return p.Name() + "/" + r
	}
	return p.Name()
}

// newPolicies are the validating policies of set, in order, with how each
// judges stored objects.
func newPolicies(set *ir.PolicySet) []*Policy {
	var out []*Policy
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Kind != ir.Validating {
			continue
		}
		pol := &Policy{IR: p}
		pol.Operation, pol.NotAudited = storedOperation(p)
		if pol.NotAudited == "" {
			pol.Skip = requestSkip(p)
		}
		out = append(out, pol)
	}
	return out
}

// storedOperation is what a stored object is judged as by p, or why p
// judges none.
func storedOperation(p *ir.Policy) (ir.Operation, string) {
	if p.Imported() && len(p.Bindings) == 0 {
		return "", "it has no binding, so the API server never runs it"
	}
	ops, whole := matchedOperations(p)
	switch {
	case !whole:
		return "", "it matches subresources only; stored objects are whole resources"
	case ops[ir.Create]:
		return ir.Create, ""
	case ops[ir.Update]:
		return ir.Update, ""
	}
	return "", fmt.Sprintf("it matches only %s, never a create or an update of a stored object", joinOperations(ops))
}

// matchedOperations are the operations p matches on whole resources (not
// subresources), and whether it matches any whole resource at all.
func matchedOperations(p *ir.Policy) (map[ir.Operation]bool, bool) {
	ops := map[ir.Operation]bool{}
	add := func(list []ir.Operation) {
		for _, o := range list {
			if o == "*" {
				for _, all := range []ir.Operation{ir.Create, ir.Update, ir.Delete, ir.Connect} {
					ops[all] = true
				}
				continue
			}
			ops[o] = true
		}
	}
	whole := false
	if !p.Imported() {
		for _, r := range p.Match.Resources {
			whole = whole || !r.SubresourcesOnly
		}
		add(p.Match.Operations)
		return ops, whole
	}
	for _, r := range p.MatchConstraints.ResourceRules {
		if slices.ContainsFunc(r.Resources, isWholeResource) {
			whole = true
			add(r.Operations)
		}
	}
	return ops, whole
}

// isWholeResource says whether a rule's resource names whole objects:
// "pods", "*", and "*/*" (every resource and subresource) do,
// "pods/status" does not.
func isWholeResource(name string) bool {
	res, sub, found := strings.Cut(name, "/")
	return !found || res == "*" && sub == "*"
}

func joinOperations(ops map[ir.Operation]bool) string {
	var names []string
	for _, o := range []ir.Operation{ir.Create, ir.Update, ir.Delete, ir.Connect} {
		if ops[o] {
			names = append(names, string(o))
		}
	}
	if len(names) == 0 {
		return "no operation"
	}
	return strings.Join(names, " and ")
}

// requestSkip says why p gives no verdict on a stored object: the first
// read of what only a request carries, with its position; "" when none.
// Kyverno's excludeGroups and excludeUsernames (the match condition
// kyverno.UsersCondition) are not such a read: they leave out requests by
// some users, and a stored object is judged for no one, as Kyverno's
// background scans judge it, so they never leave it out.
func requestSkip(p *ir.Policy) string {
	reads := slices.DeleteFunc(celenv.RequestReads(p), func(r celenv.RequestRead) bool { return r.Name == kyverno.UsersCondition })
	if len(reads) == 0 {
		return ""
	}
	r := reads[0]
	return fmt.Sprintf("it reads %s (%s:%d:%d), %s, which a stored object does not have", r.What,
		filepath.Base(r.Origin.File), r.Origin.Line, r.Origin.Column, requestReadMeaning[r.What])
}

// requestReadMeaning says what each request read stands for.
var requestReadMeaning = map[string]string{
	"request.userInfo":     "the user who sends the request",
	"request.roles":        "the roles of the user who sends the request",
	"request.clusterRoles": "the cluster roles of the user who sends the request",
	"authorizer":           "what the user who sends the request may do",
	"request.dryRun":       "whether the request is a dry run",
	"request.options":      "the request's options",
	"request.uid":          "the request's uid",
}
