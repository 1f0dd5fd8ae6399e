package gatekeeper

import (
	"fmt"
	"strings"

	"github.com/admitc/admitc/ir"
)

// The parts of a constraint's spec.match that a binding cannot say are
// matchConditions on the template's policy that read params.spec.match, as
// Gatekeeper's generated policy does, with Gatekeeper's matcher semantics
// (pkg/mutation/match): a Namespace is matched by its own name; an object
// without a namespace passes namespaces and excludedNamespaces; globs are
// a leading and/or trailing "*"; name also matches generateName; scope
// Cluster is a Namespace or an object without a namespace. Each condition
// is written so that it cannot fail on any constraint.

// requestNamespace is the namespace Gatekeeper matches: a Namespace's own
// name, else the request's namespace.
const requestNamespace = `(request.kind.group == "" && request.kind.kind == "Namespace" ? ` + requestName + ` : ` + requestNS + `)`

// requestName and requestNS are the request's name and namespace, "" when
// absent (the API server omits empty ones).
const (
	requestName = `(has(request.name) ? request.name : "")`
	requestNS   = `(has(request.namespace) ? request.namespace : "")`
)

const isNamespace = `(request.kind.group == "" && request.kind.kind == "Namespace")`

// anyObjectMeta is the metadata of the object, or of the old one on DELETE.
const anyObjectMeta = `(object != null ? object : oldObject).metadata`

// glob returns CEL that says whether string s matches Gatekeeper wildcard w
// (pkg/wildcard: *x*, *x, x*, or an exact name).
func glob(w, s string) string {
	return strings.NewReplacer("$w", w, "$s", s).Replace(
		`($w == "*" ? true : $w.startsWith("*") && $w.endsWith("*") ? $s.contains($w.substring(1, size($w) - 1)) : ` +
			`$w.startsWith("*") ? $s.endsWith($w.substring(1)) : $w.endsWith("*") ? $s.startsWith($w.substring(0, size($w) - 1)) : $s == $w)`)
}

// generateNameGlob is Gatekeeper's MatchesGenerateName.
func generateNameGlob(w, s string) string {
	return strings.NewReplacer("$w", w, "$s", s).Replace(
		`($w.startsWith("*") && $w.endsWith("*") && size($w) > 1 ? $s.contains($w.substring(1, size($w) - 1)) : ` +
			`!$w.startsWith("*") && $w.endsWith("*") ? $s.startsWith($w.substring(0, size($w) - 1)) : false)`)
}

// unset is CEL saying params.spec.match.<field> is absent.
func unset(field string) string {
	return fmt.Sprintf(`!has(params.spec) || !has(params.spec.match) || !has(params.spec.match.%s)`, field)
}

// matchConditions are the generated conditions, in a fixed order.
func matchConditions(o ir.Origin) []ir.NamedExpression {
	ns := requestNamespace
	name := `(has(` + anyObjectMeta + `.name) ? ` + anyObjectMeta + `.name : "")`
	generateName := `(has(` + anyObjectMeta + `.generateName) ? ` + anyObjectMeta + `.generateName : "")`
	conds := []struct{ name, expr string }{
		{"namespaces", unset("namespaces") + ` || ` + ns + ` == "" || params.spec.match.namespaces.exists(w, ` + glob("w", ns) + `)`},
		{"excluded_namespaces", unset("excludedNamespaces") + ` || ` + ns + ` == "" || !params.spec.match.excludedNamespaces.exists(w, ` + glob("w", ns) + `)`},
		{"name", unset("name") + ` || params.spec.match.name == "" || ` + glob("params.spec.match.name", name) + ` || ` + generateNameGlob("params.spec.match.name", generateName)},
		{"scope", unset("scope") + ` || (params.spec.match.scope == "Cluster" ? ` + isNamespace + ` || ` + requestNS + ` == "" : ` +
			`params.spec.match.scope == "Namespaced" ? !` + isNamespace + ` && ` + requestNS + ` != "" : true)`},
	}
	var out []ir.NamedExpression
	for _, c := range conds {
		co := o
		co.Path = "gatekeeper match " + c.name + " (generated)"
		out = append(out, ir.NamedExpression{Name: internalPrefix + "match_" + c.name, Expression: c.expr, Origin: co})
	}
	return out
}

// everything is a rule for every resource on ops.
func everything(ops []ir.Operation) ir.ResourceRule {
	return ir.ResourceRule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Operations: ops, Scope: "*"}
}

// kindRules are the resource rules of a constraint's match.kinds: an empty
// apiGroups or kinds list means any, as in Gatekeeper; nil means every
// resource.
func kindRules(kinds []matchKinds) []ir.ResourceRule {
	var out []ir.ResourceRule
	for _, k := range kinds {
		groups := k.APIGroups
		if len(groups) == 0 || contains(groups, "*") {
			groups = []string{"*"}
		}
		var resources []string
		if len(k.Kinds) == 0 || contains(k.Kinds, "*") {
			resources = []string{"*"}
		} else {
			for _, g := range groups {
				for _, kind := range k.Kinds {
					resources = appendNew(resources, ir.ResourceForKind(g, kind))
				}
			}
		}
		out = append(out, ir.ResourceRule{APIGroups: append([]string(nil), groups...), APIVersions: []string{"*"}, Resources: resources, Operations: []ir.Operation{"*"}, Scope: "*"})
	}
	return out
}

// Narrow sets a template policy's matchConstraints to the resources its
// constraints name, in binding order (every resource when one names
// none), on the template's operations. Call it once
// its constraints are attached.
func Narrow(p *ir.Policy) {
	ops := p.MatchConstraints.ResourceRules[0].Operations
	if len(p.Bindings) == 0 {
		p.Notes = append(p.Notes, "has no constraint, so it judges nothing (as in Gatekeeper); pass a constraint of kind "+p.ParamKind.Kind+" too")
		return
	}
	seen := map[string]bool{}
	var rules []ir.ResourceRule
	for _, b := range p.Bindings {
		if b.MatchResources == nil || len(b.MatchResources.ResourceRules) == 0 {
			p.MatchConstraints.ResourceRules = []ir.ResourceRule{everything(ops)}
			return
		}
		for _, r := range b.MatchResources.ResourceRules {
			key := strings.Join(r.APIGroups, ",") + "/" + strings.Join(r.Resources, ",")
			if !seen[key] {
				seen[key] = true
				rules = append(rules, ir.ResourceRule{APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Operations: ops, Scope: "*"})
			}
		}
	}
	p.MatchConstraints.ResourceRules = rules
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func appendNew(list []string, s string) []string {
	if contains(list, s) {
		return list
	}
	return append(list, s)
}
