package backends

import (
	"fmt"
	"slices"
	"strings"

	"github.com/admitc/admitc/ir"
)

// ScopedToNamespaces returns set with every imported policy's bindings
// (Kyverno rules, admission policy bindings, Gatekeeper constraints)
// narrowed to the given namespaces: a kubernetes.io/metadata.name In
// requirement is added to each binding's namespaceSelector, or an In
// requirement it already has is narrowed to them. admitc's own policies
// are scoped by each backend from Options.Namespaces. set itself is not
// modified.
//
// A binding that already leaves one of the namespaces out (a NotIn that
// names it, an In that does not) would judge nothing there: that is an
// error naming the policy, the binding and the namespace, never a narrower
// rollout than asked for.
func ScopedToNamespaces(set *ir.PolicySet, namespaces []string) (*ir.PolicySet, error) {
	if len(namespaces) == 0 {
		return set, nil
	}
	out := *set
	out.Policies = slices.Clone(set.Policies)
	for i := range out.Policies {
		p := &out.Policies[i]
		if !p.Imported() {
			continue
		}
		p.Bindings = slices.Clone(p.Bindings)
		for j := range p.Bindings {
			b := &p.Bindings[j]
			mr := ir.MatchResources{}
			if b.MatchResources != nil {
				mr = *b.MatchResources
			}
			sel, err := scopeSelector(mr.NamespaceSelector, namespaces)
			if err != nil {
				err.Policy, err.Binding = p.Name, b.Name
				return nil, err
			}
			mr.NamespaceSelector = sel
			b.MatchResources = &mr
		}
	}
	return &out, nil
}

// OutOfScopeError is a --namespace that a binding leaves out.
type OutOfScopeError struct {
	Policy, Binding, Namespace string
	// Why is the binding's requirement that leaves it out.
	Why string
}

func (e *OutOfScopeError) Error() string {
	return fmt.Sprintf("--namespace %s: policy %q, binding %q leaves that namespace out (its namespaceSelector has %s)", e.Namespace, e.Policy, e.Binding, e.Why)
}

// scopeSelector is s with the namespace names narrowed to namespaces.
func scopeSelector(s *ir.LabelSelector, namespaces []string) (*ir.LabelSelector, *OutOfScopeError) {
	want := slices.Clone(namespaces)
	out := &ir.LabelSelector{}
	if s != nil {
		out.MatchLabels = s.MatchLabels
		if name, ok := s.MatchLabels[NamespaceNameLabel]; ok {
			if !slices.Contains(want, name) {
				return nil, &OutOfScopeError{Namespace: namespaces[0], Why: NamespaceNameLabel + "=" + name}
			}
			want = []string{name}
		}
	}
	if s != nil {
		for _, r := range s.MatchExpressions {
			if r.Key != NamespaceNameLabel {
				out.MatchExpressions = append(out.MatchExpressions, r)
				continue
			}
			switch r.Operator {
			case "NotIn":
				for _, ns := range want {
					if slices.Contains(r.Values, ns) {
						return nil, &OutOfScopeError{Namespace: ns, Why: r.Key + " NotIn (" + strings.Join(r.Values, ", ") + ")"}
					}
				}
			case "In":
				for _, ns := range want {
					if !slices.Contains(r.Values, ns) {
						return nil, &OutOfScopeError{Namespace: ns, Why: r.Key + " In (" + strings.Join(r.Values, ", ") + ")"}
					}
				}
			default:
				out.MatchExpressions = append(out.MatchExpressions, r)
			}
		}
	}
	out.MatchExpressions = append([]ir.LabelSelectorRequirement{{Key: NamespaceNameLabel, Operator: "In", Values: want}}, out.MatchExpressions...)
	return out, nil
}
