package kyverno

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Autogen of ValidatingPolicy and MutatingPolicy, as Kyverno v1.19
// computes it (pkg/cel/autogen, pkg/cel/policies/{vpol,mpol}/autogen): a
// policy whose matchConstraints are exactly core/v1 pods gets one twin per
// group of controllers that keep their pod template at the same place.

// celTarget is one autogen controller (autogen.ConfigsMap).
type celTarget struct{ group, resource, ref string }

var celTargets = map[string]celTarget{
	"daemonsets": {"apps", "daemonsets", "defaults"}, "deployments": {"apps", "deployments", "defaults"},
	"replicasets": {"apps", "replicasets", "defaults"}, "statefulsets": {"apps", "statefulsets", "defaults"},
	"jobs": {"batch", "jobs", "defaults"}, "cronjobs": {"batch", "cronjobs", "cronjobs"},
}

// celTemplates are where each group keeps its pod template.
var celTemplates = map[string]string{"defaults": "spec.template", "cronjobs": "spec.jobTemplate.spec.template"}

// generated is one autogen twin: its IR name prefix and its spec.
type generated struct {
	prefix string
	spec   any
}

func generatedPrefix(ref string) string {
	if ref == "cronjobs" {
		return "autogen-cronjob-"
	}
	return "autogen-"
}

// canAutoGenCEL is autogen.CanAutoGen.
func canAutoGenCEL(m *admissionregistrationv1.MatchResources) bool {
	if m == nil || len(m.ExcludeResourceRules) != 0 || len(m.ResourceRules) != 1 {
		return false
	}
	if s := m.ObjectSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return false
	}
	r := m.ResourceRules[0]
	return len(r.ResourceNames) == 0 && len(r.APIGroups) == 1 && r.APIGroups[0] == "" &&
		len(r.APIVersions) == 1 && r.APIVersions[0] == "v1" && len(r.Resources) == 1 && r.Resources[0] == "pods"
}

// celAutogenGroups maps each group ("cronjobs", "defaults", in that order)
// to its targets; controllers nil means all six.
func celAutogenGroups(controllers []string) ([]string, map[string][]celTarget) {
	if controllers == nil {
		for c := range celTargets {
			controllers = append(controllers, c)
		}
	}
	groups := map[string][]celTarget{}
	seen := map[string]bool{}
	for _, c := range controllers {
		if t, ok := celTargets[c]; ok && !seen[c] {
			seen[c] = true
			groups[t.ref] = append(groups[t.ref], t)
		}
	}
	var refs []string
	for ref := range groups {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	return refs, groups
}

// celMatchConstraints is autogen.CreateMatchConstraints.
func celMatchConstraints(targets []celTarget, ops []admissionregistrationv1.OperationType, ns *admissionregistrationv1.MatchResources) *admissionregistrationv1.MatchResources {
	if len(targets) == 0 || len(ops) == 0 {
		return nil
	}
	byGroup := map[string][]string{}
	for _, t := range targets {
		byGroup[t.group] = append(byGroup[t.group], t.resource)
	}
	var groups []string
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	out := &admissionregistrationv1.MatchResources{}
	for _, g := range groups {
		res := byGroup[g]
		sort.Strings(res)
		out.ResourceRules = append(out.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Rule: admissionregistrationv1.Rule{APIGroups: []string{g}, APIVersions: []string{"v1"}, Resources: res}, Operations: ops,
		}})
	}
	if ns.NamespaceSelector != nil {
		out.NamespaceSelector = ns.NamespaceSelector.DeepCopy()
	}
	return out
}

func podControllerList(a *policiesv1alpha1.PodControllersGenerationConfiguration) []string {
	if a == nil || a.Controllers == nil {
		return nil
	}
	return append([]string{}, a.Controllers...)
}

// vpAutogen is the ValidatingPolicy's autogen twins: the whole spec's JSON
// rewritten, object.metadata.namespace kept.
func vpAutogen(s *policiesv1alpha1.ValidatingPolicySpec) []generated {
	if !canAutoGenCEL(s.MatchConstraints) {
		return nil
	}
	var controllers []string
	if s.AutogenConfiguration != nil {
		controllers = podControllerList(s.AutogenConfiguration.PodControllers)
		if controllers == nil && s.AutogenConfiguration.PodControllers != nil && s.AutogenConfiguration.PodControllers.Controllers != nil {
			controllers = []string{}
		}
	}
	refs, groups := celAutogenGroups(controllers)
	var out []generated
	for _, ref := range refs {
		spec := s.DeepCopy()
		spec.MatchConstraints = celMatchConstraints(groups[ref], s.MatchConstraints.ResourceRules[0].Operations, s.MatchConstraints)
		data, err := json.Marshal(spec)
		if err != nil {
			continue
		}
		template := celTemplates[ref]
		data = replaceProtected(data, "object.spec", "object."+template+".spec")
		data = replaceProtected(data, "oldObject.spec", "oldObject."+template+".spec")
		data = replaceProtected(data, "object.metadata", "object."+template+".metadata")
		data = replaceProtected(data, "oldObject.metadata", "oldObject."+template+".metadata")
		var rewritten policiesv1alpha1.ValidatingPolicySpec
		if json.Unmarshal(data, &rewritten) == nil {
			out = append(out, generated{prefix: generatedPrefix(ref), spec: &rewritten})
		}
	}
	return out
}

// replaceProtected is autogen's replace: every from becomes to, except
// where ".namespace" (and no more of an identifier) follows.
func replaceProtected(data []byte, from, to string) []byte {
	var buf bytes.Buffer
	for {
		idx := bytes.Index(data, []byte(from))
		if idx < 0 {
			break
		}
		buf.Write(data[:idx])
		rest := data[idx+len(from):]
		if protectedNamespace(rest) {
			buf.WriteString(from)
		} else {
			buf.WriteString(to)
		}
		data = rest
	}
	buf.Write(data)
	return buf.Bytes()
}

func protectedNamespace(rest []byte) bool {
	next, ok := bytes.CutPrefix(rest, []byte(".namespace"))
	if !ok {
		return false
	}
	if len(next) == 0 {
		return true
	}
	b := next[0]
	return !(b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9')
}

// mpAutogen is the MutatingPolicy's autogen twins: only matchConditions
// and ApplyConfiguration expressions are rewritten (variables and JSONPatch
// are not, as in Kyverno).
func mpAutogen(s *policiesv1alpha1.MutatingPolicySpec) []generated {
	if !canAutoGenCEL(s.MatchConstraints) {
		return nil
	}
	var controllers []string
	if s.AutogenConfiguration != nil && s.AutogenConfiguration.PodControllers != nil && s.AutogenConfiguration.PodControllers.Controllers != nil {
		controllers = append([]string{}, s.AutogenConfiguration.PodControllers.Controllers...)
	}
	refs, groups := celAutogenGroups(controllers)
	var out []generated
	for _, ref := range refs {
		spec := s.DeepCopy()
		spec.MatchConstraints = celMatchConstraints(groups[ref], s.MatchConstraints.ResourceRules[0].Operations, s.MatchConstraints)
		for i := range spec.MatchConditions {
			spec.MatchConditions[i].Expression = podToTemplate(spec.MatchConditions[i].Expression, ref)
		}
		for i := range spec.Mutations {
			if a := spec.Mutations[i].ApplyConfiguration; a != nil && a.Expression != "" {
				a.Expression = podToTemplate(a.Expression, ref)
			}
		}
		out = append(out, generated{prefix: generatedPrefix(ref), spec: spec})
	}
	return out
}

var (
	specRe                = regexp.MustCompile(`\b(object|oldObject|Object)\.spec`)
	metadataLabelsRe      = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.labels`)
	metadataAnnotationsRe = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.annotations`)
)

// podToTemplate is mpol autogen's convertPodToTemplateExpression.
func podToTemplate(expression, ref string) string {
	spec, metadata := "spec.template.spec", "spec.template.metadata"
	wrapper, closing := "Object{spec: Object.spec{template: Object.spec.template{", "}}}"
	if ref == "cronjobs" {
		spec, metadata = "spec.jobTemplate.spec.template.spec", "spec.jobTemplate.spec.template.metadata"
		wrapper = "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{"
		closing = "}}}}}"
	}
	expression = specRe.ReplaceAllString(expression, "${1}."+spec)
	expression = metadataLabelsRe.ReplaceAllString(expression, "${1}."+metadata+".labels")
	expression = metadataAnnotationsRe.ReplaceAllString(expression, "${1}."+metadata+".annotations")
	rest, ok := strings.CutPrefix(strings.TrimSpace(expression), "Object")
	if !ok {
		return expression
	}
	content, ok := strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "{")
	if !ok {
		return expression
	}
	depth, end := 1, 0
	for i, c := range content {
		if c == '{' {
			depth++
		} else if c == '}' {
			depth--
			if depth == 0 {
				end = i
				break
			}
		}
	}
	if end == 0 {
		return expression
	}
	return wrapper + content[:end] + closing + content[end+1:]
}
