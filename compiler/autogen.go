package compiler

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/admitc/admitc/ir"
)

// A cel policy is written against a Pod. When it also covers workloads (no
// match.kinds, or kinds that name Pod and workloads), admitc does what
// Kyverno's autogen does: each group of workload kinds that keep their pod
// spec at the same place gets its own policy, named autogen-NAME (and
// autogen-cronjob-NAME for CronJobs), with object.spec and object.metadata
// rewritten to the pod template's (object.metadata.namespace is kept, as
// Kyverno keeps it). A policy whose expressions read the object in any other
// way cannot be rewritten; it then covers Pods only, with a note.

// Variables every cel policy may use without declaring them.
const (
	VarPodSpec       = "podSpec"
	VarPodMetadata   = "podMetadata"
	VarAllContainers = "allContainers"
)

var (
	objectRef = regexp.MustCompile(`\b(object|oldObject)\b(\.\??[A-Za-z_][A-Za-z0-9_]*)?`)
	// ephemeralRef finds expressions that judge ephemeral containers: only
	// those need to see kubectl debug (pods/ephemeralcontainers) updates.
	ephemeralRef  = regexp.MustCompile(`\b(ephemeralContainers|` + VarAllContainers + `)\b`)
	builtinVarRef = regexp.MustCompile(`\bvariables\.(` + VarPodSpec + `|` + VarPodMetadata + `|` + VarAllContainers + `)\b`)
)

// debugPodSpec is the pod spec a policy judges on a kubectl debug update
// (pods/ephemeralcontainers): only the ephemeral containers oldObject lacks.
const debugPodSpec = `object.spec.transformMapEntry(k, v, {k: k in ['containers', 'initContainers'] ? [] : ` +
	`k == 'ephemeralContainers' ? v.filter(c, oldObject == null || !(c.name in oldObject.spec.?ephemeralContainers.orValue([]).map(o, o.name))) : v})`

// autogenCEL splits a cel policy into its Pod policy, its kubectl debug twin
// (when it judges ephemeral containers) and one policy per group of
// workload kinds.
func autogenCEL(p ir.Policy, kinds []ir.WorkloadKind) []ir.Policy {
	exprs := userCode(&p)
	var asWritten []ir.Resource
	groups := map[string][]ir.Resource{}
	var order []string
	var podRes *ir.Resource
	for _, k := range kinds {
		res := k.Resource
		if res.Kind == "Pod" {
			podRes = &k.Resource
			res.Subresources = nil
		}
		if res.Kind == "Pod" || k.PodSpecPath == "" {
			asWritten = append(asWritten, res)
			continue
		}
		if _, ok := groups[k.PodSpecPath]; !ok {
			order = append(order, k.PodSpecPath)
		}
		groups[k.PodSpecPath] = append(groups[k.PodSpecPath], res)
	}
	if podRes == nil {
		// Written for the kinds it names: nothing to rewrite.
		p.Match.Resources = append(asWritten, flatten(groups, order)...)
		return []ir.Policy{p}
	}
	pod := p
	pod.Match.Resources = asWritten
	out := []ir.Policy{pod}
	if ephemeralRef.MatchString(exprs) && len(podRes.Subresources) > 0 {
		out = append(out, debugTwin(p, *podRes))
	}
	if len(order) == 0 {
		return out
	}
	if bad := unrewritable(exprs); bad != "" {
		out[0].Notes = append(out[0].Notes, fmt.Sprintf("covers Pods only: its expressions read %s, which has no equivalent in a workload's pod template, so they cannot be rewritten for %s; "+
			"use object.spec and object.metadata (or variables.%s, variables.%s, variables.%s), or name the kinds in match.kinds", bad, kindList(groups, order), VarPodSpec, VarPodMetadata, VarAllContainers))
		return out
	}
	for _, path := range order {
		out = append(out, autogenFor(p, path, groups[path]))
	}
	return out
}

// debugTwin is p for kubectl debug: it matches only pods/ephemeralcontainers
// and judges only the ephemeral containers the update adds.
func debugTwin(p ir.Policy, pod ir.Resource) ir.Policy {
	d := p
	d.Name = "autogen-ephemeral-" + p.Name
	pod.SubresourcesOnly = true
	d.Match.Resources = []ir.Resource{pod}
	rewritePolicy(&d, func(code string) string { return rewriteObject(code, "spec", "variables.debugPodSpec", true) })
	d.Variables = append([]ir.NamedExpression{{Name: "debugPodSpec", Expression: debugPodSpec, Origin: p.Origin}}, d.Variables...)
	return d
}

// autogenFor is p rewritten for workloads whose pod spec is at specPath.
func autogenFor(p ir.Policy, specPath string, resources []ir.Resource) ir.Policy {
	g := p
	g.Name = "autogen-" + p.Name
	if strings.HasPrefix(specPath, "spec.jobTemplate.") {
		g.Name = "autogen-cronjob-" + p.Name
	}
	g.Match.Resources = resources
	template := strings.TrimSuffix(specPath, ".spec")
	rewritePolicy(&g, func(code string) string {
		code = rewriteObject(code, "spec", "object."+specPath, false)
		return rewriteObject(code, "metadata", "object."+template+".metadata", false)
	})
	return g
}

// addBuiltinVariables prepends the documented variables the policy's
// expressions use and does not declare itself.
func addBuiltinVariables(p *ir.Policy) {
	declared := map[string]bool{}
	for _, v := range p.Variables {
		declared[v.Name] = true
	}
	used := map[string]bool{}
	for _, m := range builtinVarRef.FindAllStringSubmatch(userCode(p), -1) {
		used[m[1]] = true
	}
	if used[VarAllContainers] && !declared[VarAllContainers] {
		used[VarPodSpec] = true
	}
	defs := []ir.NamedExpression{
		{Name: VarPodSpec, Expression: "object.spec"},
		{Name: VarPodMetadata, Expression: "object.metadata"},
		{Name: VarAllContainers, Expression: "variables.podSpec.?containers.orValue([]) + variables.podSpec.?initContainers.orValue([]) + variables.podSpec.?ephemeralContainers.orValue([])"},
	}
	var add []ir.NamedExpression
	for _, d := range defs {
		if used[d.Name] && !declared[d.Name] {
			d.Origin = p.Origin
			add = append(add, d)
		}
	}
	p.Variables = append(add, p.Variables...)
}

// rewritePolicy applies f to the code of every user expression of p; the
// variables lists are copied first, so p's siblings keep theirs.
func rewritePolicy(p *ir.Policy, f func(string) string) {
	p.Variables = append([]ir.NamedExpression(nil), p.Variables...)
	for i := range p.Variables {
		p.Variables[i].Expression = mapCode(p.Variables[i].Expression, f)
	}
	p.MatchConditions = append([]ir.NamedExpression(nil), p.MatchConditions...)
	for i := range p.MatchConditions {
		p.MatchConditions[i].Expression = mapCode(p.MatchConditions[i].Expression, f)
	}
	p.Validations = append([]ir.Validation(nil), p.Validations...)
	for i := range p.Validations {
		p.Validations[i].Expression = mapCode(p.Validations[i].Expression, f)
		p.Validations[i].MessageExpression = mapCode(p.Validations[i].MessageExpression, f)
	}
	p.AuditAnnotations = append([]ir.AuditAnnotation(nil), p.AuditAnnotations...)
	for i := range p.AuditAnnotations {
		p.AuditAnnotations[i].ValueExpression = mapCode(p.AuditAnnotations[i].ValueExpression, f)
	}
}

// rewriteObject replaces object.FIELD (and, unless objectOnly,
// oldObject.FIELD) by to, a path under object (for oldObject the same path
// under oldObject). object.metadata.namespace is kept, as Kyverno keeps it.
func rewriteObject(code, field, to string, objectOnly bool) string {
	var b strings.Builder
	last := 0
	for _, m := range objectRef.FindAllStringSubmatchIndex(code, -1) {
		root, sel := code[m[2]:m[3]], ""
		if m[4] >= 0 {
			sel = code[m[4]:m[5]]
		}
		if sel != "."+field || (objectOnly && root != "object") || namespaceFollows(code[m[1]:]) {
			continue
		}
		b.WriteString(code[last:m[0]])
		if root == "oldObject" {
			b.WriteString("oldObject." + strings.TrimPrefix(to, "object."))
		} else {
			b.WriteString(to)
		}
		last = m[1]
	}
	b.WriteString(code[last:])
	return b.String()
}

var namespaceSelect = regexp.MustCompile(`^\.namespace\b`)

func namespaceFollows(rest string) bool { return namespaceSelect.MatchString(rest) }

// unrewritable returns the first way the code reads the object other than
// object.spec and object.metadata, or "".
func unrewritable(code string) string {
	for _, m := range objectRef.FindAllStringSubmatch(code, -1) {
		switch m[2] {
		case ".spec", ".metadata":
		default:
			return m[0]
		}
	}
	return ""
}

// userCode is every CEL expression the user wrote, string literals blanked.
func userCode(p *ir.Policy) string {
	var b strings.Builder
	add := func(s string) { b.WriteString(blankLiterals(s)); b.WriteString("\n") }
	for _, v := range p.Variables {
		add(v.Expression)
	}
	for _, m := range p.MatchConditions {
		add(m.Expression)
	}
	for _, v := range p.Validations {
		add(v.Expression)
		add(v.MessageExpression)
	}
	for _, a := range p.AuditAnnotations {
		add(a.ValueExpression)
	}
	return b.String()
}

func flatten(groups map[string][]ir.Resource, order []string) []ir.Resource {
	var out []ir.Resource
	for _, k := range order {
		out = append(out, groups[k]...)
	}
	return out
}

func kindList(groups map[string][]ir.Resource, order []string) string {
	var names []string
	for _, r := range flatten(groups, order) {
		names = append(names, r.Kind)
	}
	return strings.Join(names, ", ")
}
