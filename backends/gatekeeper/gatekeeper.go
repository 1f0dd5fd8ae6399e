// Package gatekeeper emits, for every validating policy of the IR, an OPA
// Gatekeeper ConstraintTemplate (templates.gatekeeper.sh/v1) whose code is
// a K8sNativeValidation (CEL) entry, and the Constraint that enforces it.
// Parameters are inlined: admitc's built-in types already carry their
// settings in their CEL, so the Constraint has no spec.parameters and
// nothing depends on a parameter CRD being served (gatekeeper#4530). It
// imports ir and backends only; objects are written as unstructured maps in
// Gatekeeper's field names.
package gatekeeper

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// Backend is the Gatekeeper backend.
type Backend struct{}

var _ backends.Backend = Backend{}

// Name implements backends.Backend.
func (Backend) Name() string { return "gatekeeper" }

// reservedVariable matches the variable names Gatekeeper reserves.
var reservedVariable = regexp.MustCompile(`^(params|anyObject|gatekeeper_internal_.*)$`)

// Rejects implements backends.Backend.
func (Backend) Rejects(p *ir.Policy) string {
	switch {
	case p.Kind != ir.Validating:
		return "a Gatekeeper ConstraintTemplate validates; mutations are Gatekeeper's Assign resources, which admitc does not emit"
	case p.Imported():
		return "an imported admission policy with its own bindings has no Gatekeeper translation yet (use --backend vap)"
	case p.ParamKind != nil:
		return "Gatekeeper's params are the Constraint itself; a paramKind of another kind (" + p.ParamKind.Kind + ") has no equivalent"
	case len(p.AuditAnnotations) > 0:
		return "Gatekeeper's K8sNativeValidation has no auditAnnotations"
	}
	for _, r := range p.Match.Resources {
		if r.SubresourcesOnly {
			return "Gatekeeper matches kinds, not subresources: it cannot judge kubectl debug (pods/ephemeralcontainers) alone"
		}
	}
	for _, v := range p.Variables {
		if reservedVariable.MatchString(v.Name) {
			return "variable " + v.Name + " is reserved by Gatekeeper"
		}
	}
	if usesParamsOrAuthorizer(p) {
		return "its CEL reads params or authorizer, which Gatekeeper's environment does not offer"
	}
	return ""
}

var paramsRef = regexp.MustCompile(`\b(params|authorizer)\b`)

func usesParamsOrAuthorizer(p *ir.Policy) bool {
	var exprs []string
	for _, v := range p.Variables {
		exprs = append(exprs, v.Expression)
	}
	for _, m := range p.MatchConditions {
		exprs = append(exprs, m.Expression)
	}
	for _, v := range p.Validations {
		exprs = append(exprs, v.Expression, v.MessageExpression)
	}
	return paramsRef.MatchString(strings.Join(exprs, "\n"))
}

// Generate implements backends.Backend: a template and a constraint per
// validating policy it can express, in IR order.
func (b Backend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	var out backends.Output
	for i := range set.Policies {
		p := &set.Policies[i]
		if b.Rejects(p) != "" {
			continue // reported by the pipeline when no selected backend takes it
		}
		out.Objects = append(out.Objects, Template(p), Constraint(p, opts.Namespaces))
	}
	return out, nil
}

// KindName is the constraint kind for a policy name: Admitc and the name in
// CamelCase (disallow-privileged → AdmitcDisallowPrivileged).
func KindName(policy string) string {
	var b strings.Builder
	b.WriteString("Admitc")
	for _, part := range strings.FieldsFunc(policy, func(r rune) bool { return r == '-' || r == '.' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// Template returns the ConstraintTemplate of p.
func Template(p *ir.Policy) *unstructured.Unstructured {
	kind := KindName(p.Name)
	source := map[string]any{
		"failurePolicy": string(p.FailurePolicy),
		"validations":   validations(p.Validations),
	}
	if vs := named(p.Variables); len(vs) > 0 {
		source["variables"] = vs
	}
	if mcs := named(p.MatchConditions); len(mcs) > 0 {
		source["matchCondition"] = mcs
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "templates.gatekeeper.sh/v1",
		"kind":       "ConstraintTemplate",
		"metadata":   map[string]any{"name": strings.ToLower(kind), "labels": labels()},
		"spec": map[string]any{
			"crd": map[string]any{"spec": map[string]any{"names": map[string]any{"kind": kind}}},
			"targets": []any{map[string]any{
				"target":     "admission.k8s.gatekeeper.sh",
				"operations": operations(p.Match.Operations),
				"code":       []any{map[string]any{"engine": "K8sNativeValidation", "source": source}},
			}},
		},
	}}
}

// Constraint returns the Constraint that enforces p's template: p's kinds,
// the namespaces (or every namespace but kube-system) and its action.
func Constraint(p *ir.Policy, namespaces []string) *unstructured.Unstructured {
	match := map[string]any{"kinds": kinds(p.Match.Resources), "scope": "Namespaced"}
	if len(namespaces) > 0 {
		match["namespaces"] = toAny(namespaces)
	} else {
		match["excludedNamespaces"] = []any{"kube-system"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "constraints.gatekeeper.sh/v1beta1",
		"kind":       KindName(p.Name),
		"metadata":   map[string]any{"name": p.Name, "labels": labels()},
		"spec":       map[string]any{"enforcementAction": enforcementAction(p.Actions), "match": match},
	}}
}

// enforcementAction maps validation actions: Deny → deny, Warn → warn,
// Audit alone → dryrun (audited, never returned to the client).
func enforcementAction(actions []ir.Action) string {
	for _, a := range actions {
		if a == ir.Deny {
			return "deny"
		}
	}
	for _, a := range actions {
		if a == ir.Warn {
			return "warn"
		}
	}
	return "dryrun"
}

func kinds(rs []ir.Resource) []any {
	byGroup := map[string][]any{}
	var groups []string
	for _, r := range rs {
		if _, ok := byGroup[r.Group]; !ok {
			groups = append(groups, r.Group)
		}
		byGroup[r.Group] = append(byGroup[r.Group], r.Kind)
	}
	var out []any
	for _, g := range groups {
		out = append(out, map[string]any{"apiGroups": []any{g}, "kinds": byGroup[g]})
	}
	return out
}

func validations(vs []ir.Validation) []any {
	var out []any
	for _, v := range vs {
		m := map[string]any{"expression": v.Expression}
		if v.Message != "" {
			m["message"] = v.Message
		}
		if v.MessageExpression != "" {
			m["messageExpression"] = v.MessageExpression
		}
		out = append(out, m)
	}
	return out
}

func named(es []ir.NamedExpression) []any {
	var out []any
	for _, e := range es {
		out = append(out, map[string]any{"name": e.Name, "expression": e.Expression})
	}
	return out
}

func operations(ops []ir.Operation) []any {
	out := make([]any, len(ops))
	for i, o := range ops {
		out[i] = string(o)
	}
	return out
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func labels() map[string]any {
	return map[string]any{backends.ManagedByLabel: backends.ManagedByValue}
}
