package kyverno

import (
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/podsecurity"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// The typed podSecurity rule decides with each check's typed verdict
// (podsecurity/fails.go), one boolean expression over the pod:
//
//	!(variables.allContainers.exists(c, c.?securityContext.?privileged.orValue(false)) || ...)
//
// and keeps the exact records only for Kyverno's message, in
// messageExpression (the API server evaluates a policy's variables when an
// expression reads them, so an admitted pod never builds them). A check
// that an exclusion covers decides by its records (what remains after the
// exclusion), as in the exact form. On the old object of an UPDATE
// (allowExistingViolations) only the verdicts run. The pod is read where
// the rule's kinds keep it, with no test of the kind.

// allContainersVariable and oldAllContainersVariable hold every container
// of the pod (init, regular, ephemeral) of the object and of the old
// object.
const (
	allContainersVariable    = "allContainers"
	oldAllContainersVariable = "oldAllContainers"
)

// podContainerLists are a pod spec's container lists.
var podContainerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// typedPodSecurityRule is pol, a lowered podSecurity rule, decided by the
// typed verdicts against the schema of its rule's kinds, with pol as its
// Dynamic form; nil when pol holds other variables (context entries), the
// kinds do not keep their pod in one place, or one has no known schema.
func (r *reader) typedPodSecurityRule(pol *ir.Policy, c computedRule, m loweredMatch, enforce bool) *ir.Policy {
	ps := c.rule.Validation.PodSecurity
	for _, v := range pol.Variables {
		if !strings.HasPrefix(v.Name, PodSecurityVariable) && v.Name != OutcomeVariable {
			return nil
		}
	}
	if pol.ParamKind != nil {
		return nil
	}
	kinds, ok := ruleKinds(c)
	if !ok {
		return nil
	}
	place, ok := podsecurity.PlacementOf(kinds)
	nodes := r.ruleSchemas(c.rule)
	if !ok || len(nodes) == 0 {
		return nil
	}
	n := kubeschema.Intersect(nodes...)
	minor, err := podsecurity.ParseVersion(ps.Version)
	if err != nil {
		return nil
	}
	covered := map[string]bool{}
	for _, x := range ps.Exclude {
		for _, id := range podsecurity.ControlChecks[x.ControlName] {
			covered[id] = true
		}
	}
	now, err := podsecurity.Translate(ps, "object", PodSecurityVariable)
	if err != nil {
		return nil
	}
	now.Place("object", place)
	out := *pol
	out.Variables, out.AuditAnnotations = nil, nil
	o := pol.Validations[0].Origin
	for _, v := range now.Variables {
		out.Variables = append(out.Variables, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: o})
	}
	reads := &schemaReads{n: n}
	// verdict is the checks' verdict on the pod under root, whose
	// containers (all three lists) are the CEL containers, and a check's
	// records (for one an exclusion covers) the CEL records(id).
	verdict := func(root, containers string, records func(id string) string) (string, bool) {
		spec, meta, ok := reads.pod(root, place)
		if !ok {
			return "", false
		}
		p := &podsecurity.TypedPod{Spec: spec, Meta: meta, Containers: containers}
		var terms []string
		for _, chk := range podsecurity.Evaluated(string(ps.Level)) {
			v := chk.Selected(minor)
			if v.Fails == nil {
				return "", false
			}
			verdict := v.Fails(p)
			if covered[chk.ID] {
				// The records decide; they read what the verdict reads,
				// which is recorded all the same.
				verdict = podsecurity.CheckFails(records(chk.ID))
			}
			terms = append(terms, verdict)
		}
		if !reads.pathsUnder(place, append(p.Reads(), podsecurity.MessageReads...)) {
			return "", false
		}
		return strings.Join(terms, " || "), true
	}
	// containerVariable declares the variable name, every container of
	// the pod under root.
	containerVariable := func(root, name string) {
		spec := root + "." + place.Spec
		all := make([]string, len(podContainerLists))
		for i, l := range podContainerLists {
			all[i] = reads.list(place.Spec, spec, l)
		}
		out.Variables = append(out.Variables, ir.NamedExpression{Name: name, Expression: strings.Join(all, " + "), Origin: o})
	}
	// The verdicts read the container lists and a covered check's
	// records through placeholders, which pair the object's with the old
	// object's (eitherObjectValid) and are then read as the variables.
	b := celbuild.New()
	var placeholders []string
	placeholder := func(variable string) string {
		placeholders = append(placeholders, variable)
		return "__admitc_" + variable
	}
	parsedVerdict := func(root, containers, prefix string) (celbuild.Expr, bool) {
		text, ok := verdict(root, placeholder(containers), func(id string) string { return placeholder(prefix + "_" + id) })
		if !ok {
			return nil, false
		}
		e, err := b.Parse(text)
		return e, err == nil
	}
	bad, ok := parsedVerdict("object", allContainersVariable, PodSecurityVariable)
	if !ok {
		return nil
	}
	containerVariable("object", allContainersVariable)
	valid := b.Not(bad)
	var skipped celbuild.Expr
	if enforce && c.rule.HasValidateAllowExistingViolations() {
		if len(covered) > 0 {
			before, _ := podsecurity.Translate(ps, "oldObject", podSecurityBeforeVariable)
			before.Place("oldObject", place)
			for _, v := range before.Variables {
				if check, isCheck := strings.CutPrefix(v.Name, podSecurityBeforeVariable+"_"); isCheck && !covered[check] || v.Name == podSecurityBeforeVariable {
					continue
				}
				out.Variables = append(out.Variables, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: o})
			}
		}
		oldBad, ok := parsedVerdict("oldObject", oldAllContainersVariable, podSecurityBeforeVariable)
		if !ok {
			return nil
		}
		containerVariable("oldObject", oldAllContainersVariable)
		guard, err := b.Parse(existingViolationGuard(m))
		if err != nil {
			return nil
		}
		existing := b.And(guard, oldBad)
		skipped = b.Ternary(b.And(bad, existing), b.String(offlineSkipReason), b.String(""))
		valid = b.Or(valid, existing)
		pairs := []pairedName{{Now: "__admitc_" + allContainersVariable, Old: "__admitc_" + oldAllContainersVariable}}
		for id := range covered {
			pairs = append(pairs, pairedName{Now: "__admitc_" + PodSecurityVariable + "_" + id, Old: "__admitc_" + podSecurityBeforeVariable + "_" + id})
		}
		if once, ok := eitherObjectValid(b, b.Ident("object"), bad, oldBad, guard, pairs); ok {
			valid = once
		}
	}
	asVariables := func(e celbuild.Expr) string {
		for _, v := range placeholders {
			e = b.Substitute(e, "__admitc_"+v, b.Select(b.Ident("variables"), v))
		}
		return b.MustPrint(e)
	}
	out.Validations = []ir.Validation{{
		Expression:        asVariables(valid),
		MessageExpression: podsecurity.Message(c.rule.Name, ps, now.Result),
		Origin:            o,
	}}
	if skipped != nil {
		out.OfflineAnnotations = []ir.AuditAnnotation{{Key: SkipAnnotation, ValueExpression: asVariables(skipped), Origin: o}}
	}
	out.SchemaReads = append([]ir.SchemaRead{{Path: "kind", Shape: "string", Present: true, Enum: kinds}}, reads.out...)
	dynamic := *pol
	out.Dynamic = &dynamic
	return &out
}

// ruleKinds are the kinds a rule matches, by name; false when a filter
// names none, or a kind is given with a wildcard or a subresource.
func ruleKinds(c computedRule) ([]string, bool) {
	var out []string
	for _, f := range filters(&c.rule.MatchResources) {
		if len(f.Kinds) == 0 {
			return nil, false
		}
		for _, k := range f.Kinds {
			_, _, kind, sub := parseKindSelector(k)
			if sub != "" || hasWildcard(kind) {
				return nil, false
			}
			if !contains(out, kind) {
				out = append(out, kind)
			}
		}
	}
	return out, len(out) > 0
}

// schemaReads records the fields a typed verdict reads, with the shape
// the schema n gives them.
type schemaReads struct {
	n   kubeschema.Node
	out []ir.SchemaRead
}

// at is the schema node at a dotted path with [] steps, recording each
// step on the way (present: read without ?, so assumed in every object);
// false when the schema does not say what a step holds.
func (s *schemaReads) at(path string, present bool) (kubeschema.Node, bool) {
	steps, err := ir.SchemaPathSteps(path)
	if err != nil {
		return kubeschema.Node{}, false
	}
	n, at := s.n, ""
	for _, step := range steps {
		var child kubeschema.Node
		switch {
		case step == "[]" && n.Shape() == kubeschema.List:
			child, at = n.Items(), at+"[]"
		case step == "[]" && n.Shape() == kubeschema.Map:
			child, at = n.Values(), at+"[]"
		case step == "[]":
			return kubeschema.Node{}, false
		default:
			f, ok := n.Field(step)
			if !ok || present && !n.AlwaysPresent(step) {
				return kubeschema.Node{}, false
			}
			child, at = f, ir.SchemaPath(at, step)
		}
		if child.Shape() == kubeschema.Unknown {
			return kubeschema.Node{}, false
		}
		s.record(ir.SchemaRead{Path: at, Shape: child.Shape().String(), Present: present && step != "[]"})
		n = child
	}
	return n, true
}

func (s *schemaReads) record(r ir.SchemaRead) {
	for i, e := range s.out {
		if e.Path == r.Path {
			s.out[i].Present = e.Present || r.Present
			return
		}
	}
	s.out = append(s.out, r)
}

// pod is the CEL of the pod spec and metadata under root, read without ?
// (every object has them); false when the schema does not say so.
func (s *schemaReads) pod(root string, p podsecurity.Placement) (spec, meta string, ok bool) {
	if _, ok := s.at(p.Spec, true); !ok {
		return "", "", false
	}
	if _, ok := s.at(p.Meta, true); !ok {
		return "", "", false
	}
	return root + "." + p.Spec, root + "." + p.Meta, true
}

// list is the CEL of a container list of the pod spec at path (spec its
// CEL): read plainly when every pod has it.
func (s *schemaReads) list(path, spec, name string) string {
	if _, ok := s.at(path+"."+name, true); ok {
		return spec + "." + name
	}
	s.at(path+"."+name, false)
	return spec + ".?" + name + ".orValue([])"
}

// pathsUnder records the reads of a typed pod placed at p: false when the
// schema does not say what one holds.
func (s *schemaReads) pathsUnder(p podsecurity.Placement, reads []string) bool {
	for _, r := range reads {
		var full []string
		switch {
		case strings.HasPrefix(r, "spec."):
			full = []string{p.Spec + strings.TrimPrefix(r, "spec")}
		case strings.HasPrefix(r, "metadata."):
			full = []string{p.Meta + strings.TrimPrefix(r, "metadata")}
		case strings.HasPrefix(r, "containers[]."):
			for _, l := range podContainerLists {
				full = append(full, p.Spec+"."+l+strings.TrimPrefix(r, "containers"))
			}
		default:
			return false
		}
		for _, f := range full {
			if _, ok := s.at(f, false); !ok {
				return false
			}
		}
	}
	return true
}
