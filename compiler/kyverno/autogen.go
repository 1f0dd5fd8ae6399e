package kyverno

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Autogen of a ClusterPolicy, as Kyverno v1.19 computes it
// (pkg/autogen/v1): which rules get pod-controller twins, their names,
// kinds and the text rewrite. Kept line for line close to Kyverno's code,
// quirks included (the rewrite is a plain text replacement over the whole
// rule, messages and names too).

// podControllers are Kyverno's default autogen controllers.
var podControllers = []string{"DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController", "CronJob"}

// controllerGVK is pkg/autogen/v1/internal.PodControllerGVKMap.
var controllerGVK = map[string]string{
	"DaemonSet": "apps/v1/DaemonSet", "Deployment": "apps/v1/Deployment", "Job": "batch/v1/Job",
	"StatefulSet": "apps/v1/StatefulSet", "ReplicaSet": "apps/v1/ReplicaSet",
	"ReplicationController": "v1/ReplicationController", "CronJob": "batch/v1/CronJob", "Pod": "v1/Pod",
}

// computedRule is a rule as Kyverno's engine runs it: one of the policy's,
// or one autogen made from rule spec.rules[index].
type computedRule struct {
	rule      kyvernov1.Rule
	index     int
	autogenOf string
}

// computeRules is Kyverno's ComputeRules(policy, ""): the policy's rules,
// then for each rule its autogen-NAME and autogen-cronjob-NAME rules.
func computeRules(meta metav1.ObjectMeta, spec *kyvernov1.Spec) []computedRule {
	var own []computedRule
	for i, r := range spec.Rules {
		own = append(own, computedRule{rule: r, index: i})
	}
	apply, desired := canAutoGen(spec)
	actual := desired
	if ann, ok := meta.Annotations[AutogenAnnotation]; ok && apply {
		actual = strings.Split(ann, ",")
	}
	if !apply {
		actual = []string{"none"}
	}
	controllers := strings.Join(actual, ",")
	if controllers == "none" {
		return own
	}
	var gen []computedRule
	for i := range spec.Rules {
		src := spec.Rules[i]
		if g := generateRuleForControllers(src, stripCronJob(controllers)); g != nil {
			gen = append(gen, computedRule{rule: rewrite(*g, podTemplate), index: i, autogenOf: src.Name})
		}
		if g := generateCronJobRule(src, controllers); g != nil {
			gen = append(gen, computedRule{rule: rewrite(*g, cronJobTemplate), index: i, autogenOf: src.Name})
		}
	}
	if len(gen) == 0 {
		return own
	}
	var out []computedRule
	for _, c := range own {
		if !isAutogenRuleName(c.rule.Name) {
			out = append(out, c)
		}
	}
	return append(out, gen...)
}

// canAutoGen is Kyverno's CanAutoGen: autogen is off for the whole policy
// when a rule generates, patches with JSON6902, or a match or exclude
// names objects, selects labels or annotations, or lists Pod among other
// kinds; it is needed when some rule names Pod or a pod controller.
func canAutoGen(spec *kyvernov1.Spec) (bool, []string) {
	needed := false
	for _, rule := range spec.Rules {
		if rule.HasGenerate() {
			return false, []string{"none"}
		}
		if m := rule.Mutation; m != nil {
			if m.PatchesJSON6902 != "" {
				return false, []string{"none"}
			}
			for _, f := range m.ForEachMutation {
				if f.PatchesJSON6902 != "" {
					return false, []string{"none"}
				}
			}
		}
		for _, d := range descriptions(&rule.MatchResources) {
			if !autogenSupported(&needed, d) {
				return false, nil
			}
		}
		if rule.ExcludeResources != nil {
			for _, d := range descriptions(rule.ExcludeResources) {
				if !autogenSupported(&needed, d) {
					return false, nil
				}
			}
		}
	}
	if !needed {
		return false, nil
	}
	return true, podControllers
}

func descriptions(m *kyvernov1.MatchResources) []kyvernov1.ResourceDescription {
	out := []kyvernov1.ResourceDescription{m.ResourceDescription}
	for _, f := range m.Any {
		out = append(out, f.ResourceDescription)
	}
	for _, f := range m.All {
		out = append(out, f.ResourceDescription)
	}
	return out
}

func autogenSupported(needed *bool, d kyvernov1.ResourceDescription) bool {
	if d.Name != "" || len(d.Names) > 0 || d.Selector != nil || d.Annotations != nil || (len(d.Kinds) > 1 && containsKind(d.Kinds, "Pod")) {
		return false
	}
	for _, k := range d.Kinds {
		if k == "Pod" || contains(podControllers, k) {
			*needed = true
		}
	}
	return true
}

func stripCronJob(controllers string) string {
	var out []string
	for _, c := range splitKinds(controllers) {
		if c != "CronJob" {
			out = append(out, c)
		}
	}
	return strings.Join(out, ",")
}

func splitKinds(controllers string) []string {
	kinds := strings.Split(controllers, ",")
	sort.Strings(kinds)
	return kinds
}

func isAutogenRuleName(name string) bool { return strings.HasPrefix(name, "autogen-") }

func autogenRuleName(prefix, name string) string {
	name = prefix + "-" + name
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

func convertKindsToGVK(kinds []string) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if gvk, ok := controllerGVK[k]; ok {
			k = gvk
		}
		out = append(out, k)
	}
	return out
}

// generateRuleForControllers is Kyverno's function of the same name.
func generateRuleForControllers(rule kyvernov1.Rule, controllers string) *kyvernov1.Rule {
	if isAutogenRuleName(rule.Name) || controllers == "" {
		return nil
	}
	var excludeKinds []string
	if rule.ExcludeResources != nil {
		excludeKinds = rule.ExcludeResources.GetKinds()
	}
	if !containsKind(rule.MatchResources.GetKinds(), "Pod") || (len(excludeKinds) != 0 && !containsKind(excludeKinds, "Pod")) {
		return nil
	}
	if controllers == "all" {
		controllers = "DaemonSet,Deployment,Job,StatefulSet,ReplicaSet,ReplicationController"
	} else if controllers != "none" {
		var valid []string
		for _, c := range splitKinds(controllers) {
			if contains(podControllers[:6], c) {
				valid = append(valid, c)
			}
		}
		if len(valid) > 0 {
			controllers = strings.Join(valid, ",")
		}
	}
	return generateRule(autogenRuleName("autogen", rule.Name), &rule, "template", splitKinds(controllers), func(fs kyvernov1.ResourceFilters, kinds []string) kyvernov1.ResourceFilters {
		out := fs.DeepCopy()
		for i, f := range fs {
			if containsKind(f.Kinds, "Pod") {
				out[i].Kinds = convertKindsToGVK(kinds)
			}
		}
		return out
	})
}

// generateCronJobRule is Kyverno's function of the same name: the CronJob
// twin of the pod-controller rule.
func generateCronJobRule(rule kyvernov1.Rule, controllers string) *kyvernov1.Rule {
	if !strings.Contains(controllers, "CronJob") && !strings.Contains(controllers, "all") {
		return nil
	}
	return generateRule(autogenRuleName("autogen-cronjob", rule.Name), generateRuleForControllers(rule, controllers), "jobTemplate", []string{"CronJob"}, func(fs kyvernov1.ResourceFilters, kinds []string) kyvernov1.ResourceFilters {
		out := fs.DeepCopy()
		for i := range out {
			out[i].Kinds = convertKindsToGVK(kinds)
		}
		return out
	})
}

// generateRule renames rule, points its kinds at kinds and moves a pattern
// under spec.<tplKey>; like Kyverno it makes no rule when the rule has
// nothing autogen knows how to carry over.
func generateRule(name string, rule *kyvernov1.Rule, tplKey string, kinds []string, filters func(kyvernov1.ResourceFilters, []string) kyvernov1.ResourceFilters) *kyvernov1.Rule {
	if rule == nil || !autogenCarries(rule) {
		return nil
	}
	rule = rule.DeepCopy()
	rule.Name = name
	switch m := &rule.MatchResources; {
	case len(m.Any) > 0:
		m.Any = filters(m.Any, kinds)
	case len(m.All) > 0:
		m.All = filters(m.All, kinds)
	default:
		m.Kinds = convertKindsToGVK(kinds)
	}
	if e := rule.ExcludeResources; e != nil {
		switch {
		case len(e.Any) > 0:
			e.Any = filters(e.Any, kinds)
		case len(e.All) > 0:
			e.All = filters(e.All, kinds)
		case len(e.Kinds) != 0:
			e.Kinds = convertKindsToGVK(kinds)
		}
	}
	if m := rule.Mutation; m != nil {
		rule.Mutation = nestMutation(m, tplKey)
	} else if v := rule.Validation; v != nil {
		rule.Validation = nestPatterns(v, tplKey)
	}
	return rule
}

// nestMutation is generateRule's mutate branch: a patchStrategicMerge p
// becomes {spec: {tplKey: p}} in a new mutate block that keeps nothing
// else; each foreach's patchStrategicMerge is nested the same way, with
// its list, context and preconditions kept. Other mutations are kept.
func nestMutation(m *kyvernov1.Mutation, tplKey string) *kyvernov1.Mutation {
	nest := func(p any) any { return map[string]any{"spec": map[string]any{tplKey: p}} }
	if p := m.GetPatchStrategicMerge(); p != nil {
		out := &kyvernov1.Mutation{}
		out.SetPatchStrategicMerge(nest(p))
		return out
	}
	if len(m.ForEachMutation) > 0 {
		var fes []kyvernov1.ForEachMutation
		for _, f := range m.ForEachMutation {
			t := kyvernov1.ForEachMutation{List: f.List, Context: f.Context, AnyAllConditions: f.AnyAllConditions}
			t.SetPatchStrategicMerge(nest(f.GetPatchStrategicMerge()))
			fes = append(fes, t)
		}
		return &kyvernov1.Mutation{ForEachMutation: fes}
	}
	return m
}

// nestPatterns is generateRule's validate branch for pattern and
// anyPattern: each pattern p becomes {spec: {tplKey: p}}, and the new
// validate keeps only the message and the failure settings. Kyverno also
// shifts $( ) references in the message, which admitc refuses. Other
// validations are kept as they are.
func nestPatterns(v *kyvernov1.Validation, tplKey string) *kyvernov1.Validation {
	nest := func(p any) any { return map[string]any{"spec": map[string]any{tplKey: p}} }
	out := &kyvernov1.Validation{Message: v.Message, FailureAction: v.FailureAction, FailureActionOverrides: v.FailureActionOverrides, AllowExistingViolations: v.AllowExistingViolations}
	switch {
	case v.GetPattern() != nil:
		out.SetPattern(nest(v.GetPattern()))
	case v.Deny != nil || v.PodSecurity != nil:
		return v
	case v.GetAnyPattern() != nil:
		ps, _ := v.GetAnyPattern().([]any)
		var nested []any
		for _, p := range ps {
			nested = append(nested, nest(p))
		}
		out.SetAnyPattern(nested)
	default:
		return v
	}
	return out
}

// autogenCarries says whether Kyverno's generateRule returns a rule: a
// strategic-merge or foreach mutation, a pattern, deny, podSecurity,
// anyPattern, foreach or cel validation, or verifyImages.
func autogenCarries(rule *kyvernov1.Rule) bool {
	if m := rule.Mutation; m != nil && (m.GetPatchStrategicMerge() != nil || len(m.ForEachMutation) > 0) {
		return true
	}
	if v := rule.Validation; v != nil && (v.GetPattern() != nil || v.Deny != nil || v.PodSecurity != nil || v.GetAnyPattern() != nil || len(v.ForEachValidation) > 0 || v.CEL != nil) {
		return true
	}
	return rule.VerifyImages != nil
}

// replacement is one of Kyverno's ordered text replacements.
type replacement struct{ from, to string }

// replacements are Kyverno's updateFields tables for a pod template under
// template ("spec.template" or "spec.jobTemplate.spec.template"): object and
// oldObject spec and metadata, prefixed with "request." for JMESPath.
func replacements(root, template string) []replacement {
	return []replacement{
		{root + "object.spec", root + "object." + template + ".spec"},
		{root + "oldObject.spec", root + "oldObject." + template + ".spec"},
		{root + "object.metadata", root + "object." + template + ".metadata"},
		{root + "oldObject.metadata", root + "oldObject." + template + ".metadata"},
	}
}

// Templates of the two autogen rule kinds.
const (
	podTemplate     = "spec.template"
	cronJobTemplate = "spec.jobTemplate.spec.template"
)

// rewrite applies Kyverno's updateFields to the rule: the CEL table when
// the rule validates with CEL, the JMESPath one otherwise, in order, over
// the rule's JSON.
func rewrite(rule kyvernov1.Rule, template string) kyvernov1.Rule {
	table := replacements("request.", template)
	if rule.Validation != nil && rule.Validation.CEL != nil {
		table = replacements("", template)
	}
	data, err := json.Marshal(rule)
	if err != nil {
		return rule
	}
	s := string(data)
	for _, r := range table {
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	var out kyvernov1.Rule
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return rule
	}
	return out
}

var versionRegex = regexp.MustCompile(`^(v\d((alpha|beta)\d)?|\*)$`)

// parseKindSelector is Kyverno's kube.ParseKindSelector: group, version,
// kind and subresource of a match kind ("Pod", "v1/Pod", "apps/v1/Deployment",
// "Pod/status", "*/*", "Pod.status").
func parseKindSelector(input string) (string, string, string, string) {
	parts := strings.Split(input, "/")
	parts = append(parts[:len(parts)-1], strings.Split(parts[len(parts)-1], ".")...)
	switch len(parts) {
	case 1:
		return "*", "*", parts[0], ""
	case 2:
		if parts[0] == "*" && parts[1] == "*" {
			return "*", "*", "*", "*"
		}
		if parts[0] == "*" && strings.ToLower(parts[1]) == parts[1] {
			return "*", "*", parts[0], parts[1]
		}
		if versionRegex.MatchString(parts[0]) {
			return "*", parts[0], parts[1], ""
		}
		return "*", "*", parts[0], parts[1]
	case 3:
		if versionRegex.MatchString(parts[0]) {
			return "*", parts[0], parts[1], parts[2]
		}
		return parts[0], parts[1], parts[2], ""
	case 4:
		return parts[0], parts[1], parts[2], parts[3]
	}
	return "", "", "", ""
}

// containsKind is Kyverno's kube.ContainsKind.
func containsKind(list []string, kind string) bool {
	for _, e := range list {
		k := kindFromGVK(e)
		if before, _, ok := strings.Cut(k, "/"); ok && strings.Count(k, "/") == 1 {
			k = before
		}
		if k == kind {
			return true
		}
	}
	return false
}

// kindFromGVK is the kind half of Kyverno's kube.GetKindFromGVK.
func kindFromGVK(s string) string {
	parts := strings.Split(s, "/")
	sub := func(x string) string { return strings.Replace(x, ".", "/", 1) }
	switch len(parts) {
	case 1:
		return sub(s)
	case 2:
		if parts[0] == "*" && parts[1] == "*" {
			return "*/*"
		}
		if versionRegex.MatchString(parts[0]) {
			return sub(parts[1])
		}
		return parts[0] + "/" + parts[1]
	case 3:
		if versionRegex.MatchString(parts[0]) {
			return parts[1] + "/" + parts[2]
		}
		return sub(parts[2])
	case 4:
		return parts[2] + "/" + parts[3]
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
