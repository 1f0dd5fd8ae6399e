package gatekeeper

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
)

// validationPoint is the enforcement point of Gatekeeper's admission webhook,
// the one a scoped enforcement action must name to act at admission.
const validationPoint = "validation.gatekeeper.sh"

// actions maps an enforcementAction to validationActions, as Gatekeeper's
// generated bindings do.
var actions = map[string]ir.Action{"deny": ir.Deny, "warn": ir.Warn, "dryrun": ir.Audit}

// constraint lowers a Constraint to a binding of its template's policy.
func (r *reader) constraint() *ir.Binding {
	var c constraintObject
	if ds := r.doc.Decode(&c, "a Gatekeeper constraint"); len(ds) > 0 {
		r.diags = append(r.diags, ds...)
		return nil
	}
	if c.Metadata.Name == "" {
		r.errorf("metadata.name", "missing metadata.name")
	}
	r.diags = append(r.diags, r.doc.FieldErrors(webhookErrors(&c), source.Refusal{By: "Gatekeeper's webhook refuses this constraint"})...)
	b := &ir.Binding{
		Name: c.Metadata.Name, Origin: r.origin(""),
		Actions:        r.actions(c.Spec),
		MatchResources: r.matchResources(c.Spec.Match),
		ParamRef:       &ir.ParamRef{Name: c.Metadata.Name, ParameterNotFoundAction: ir.ParamAllow},
		Params:         []map[string]any{r.paramObject()},
	}
	return b
}

// actions are the validationActions of a constraint's enforcementAction.
// A scoped action is read when every entry is one action for admission
// (enforcement point validation.gatekeeper.sh or "*").
func (r *reader) actions(s constraintSpec) []ir.Action {
	ea := s.EnforcementAction
	if ea == "" {
		ea = "deny"
	}
	if a, ok := actions[ea]; ok {
		return []ir.Action{a}
	}
	if ea != "scoped" {
		r.errorf("spec.enforcementAction", "enforcementAction must be deny, warn, dryrun or scoped (lowercase: Gatekeeper's webhook refuses any other value), got %q", ea)
		return nil
	}
	var out []ir.Action
	for i, sa := range s.ScopedEnforcementActions {
		path := fmt.Sprintf("spec.scopedEnforcementActions[%d]", i)
		a, ok := actions[sa.Action]
		if !ok {
			r.errorf(path+".action", "admitc reads scoped actions deny, warn and dryrun, got %q", sa.Action)
			continue
		}
		if !atAdmission(sa) {
			continue
		}
		if !contains(actionNames(out), string(a)) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		r.errorf("spec.scopedEnforcementActions", "no scoped enforcement action applies at admission (enforcement point %s or \"*\"); admitc cannot say what this constraint does there", validationPoint)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func atAdmission(sa scopedAction) bool {
	for _, p := range sa.EnforcementPoints {
		if p.Name == "*" || p.Name == validationPoint {
			return true
		}
	}
	return false
}

func actionNames(as []ir.Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(a))
	}
	return out
}

// matchResources is the binding scope of a constraint's spec.match; its
// namespaces, excludedNamespaces, name and scope are read by the template's
// generated matchConditions.
func (r *reader) matchResources(m *match) *ir.MatchResources {
	if m == nil {
		return nil
	}
	switch m.Source {
	case "", "All", "Original":
	default:
		r.errorf("spec.match.source", "admitc judges the objects it is given, not resources Gatekeeper's expansion generates: source must be All or Original, got %q", m.Source)
	}
	switch m.Scope {
	case "", "*", "Cluster", "Namespaced":
	default:
		r.errorf("spec.match.scope", "scope must be *, Cluster or Namespaced, got %q", m.Scope)
	}
	mr := &ir.MatchResources{ResourceRules: kindRules(m.Kinds), ObjectSelector: apiconv.FromSelector(m.LabelSelector), NamespaceSelector: apiconv.FromSelector(m.NamespaceSelector), MatchPolicy: ir.Equivalent}
	if len(mr.ResourceRules) == 0 && mr.ObjectSelector == nil && mr.NamespaceSelector == nil {
		return nil
	}
	return mr
}

// paramObject is the constraint as the policy's parameter object, in the
// apiVersion its paramKind names, with JSON's number types.
func (r *reader) paramObject() map[string]any {
	obj, err := r.doc.Object()
	if err != nil {
		r.errorf("", "%v", err)
		return nil
	}
	obj["apiVersion"] = ParamAPIVersion
	return obj
}

// webhookErrors are what Gatekeeper's validating webhook refuses in a
// constraint besides its enforcement action (validateGatekeeperResources,
// K8sValidationTarget.ValidateConstraint): a name longer than 63
// characters, and match selectors that are not valid label selectors.
func webhookErrors(c *constraintObject) field.ErrorList {
	var errs field.ErrorList
	if len(c.Metadata.Name) > 63 {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), c.Metadata.Name, 63))
	}
	if m := c.Spec.Match; m != nil {
		match := field.NewPath("spec", "match")
		for _, sel := range []struct {
			name string
			sel  *metav1.LabelSelector
		}{{"labelSelector", m.LabelSelector}, {"namespaceSelector", m.NamespaceSelector}} {
			if sel.sel != nil {
				errs = append(errs, metav1validation.ValidateLabelSelector(sel.sel, metav1validation.LabelSelectorValidationOptions{}, match.Child(sel.name))...)
			}
		}
	}
	return errs
}
