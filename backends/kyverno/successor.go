package kyverno

import (
	"fmt"
	"sort"
	"strings"

	kpolv1 "github.com/kyverno/api/api/policies.kyverno.io/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
)

// The successor of an imported policy: what a ClusterPolicy's rule (or a
// ValidatingPolicy, MutatingPolicy or admission policy read by admitc)
// becomes as a policies.kyverno.io/v1 ValidatingPolicy, MutatingPolicy or
// NamespacedValidatingPolicy.

// importedMatchCondition is the name of Kyverno's generated match
// condition (compiler/kyverno.MatchConditionName, which the importer
// reserves); a successor carries the condition under successorMatchCondition.
const (
	importedMatchCondition  = "kyverno-match"
	successorMatchCondition = "match-and-exclude"
)

// AutogenCheck says whether candidate, a successor with Kyverno's autogen
// on, decides exactly as originals do once Kyverno's importer reads it back
// (its own policy as originals[0], its autogen twins as the others): ""
// when it does, else the first difference. The backend cannot import the
// importer; the caller supplies the check.
type AutogenCheck func(candidate runtime.Object, originals []*ir.Policy) string

// Translation is what became of one source rule, or one ruleless policy:
// the successors that stand for it, or why it has none.
type Translation struct {
	// From names the source policy and rule (the rule autogen copied, not
	// an autogen rule's name).
	From ir.PolicyRef
	// Successors are the objects emitted for it, in order.
	Successors []Successor
	// Notes say where the translation differs from the source (a name
	// changed, autogen written out) without deciding differently.
	Notes []string
	// Refusal says why it has no successor; empty when translated.
	Refusal string
}

// Successor is one emitted policy and the IR policies it stands for.
type Successor struct {
	Name   string
	Kind   string
	Object runtime.Object
	Covers []*ir.Policy
}

// family is the IR policies of one source rule: the rule's own first,
// then its autogen twins.
type family struct {
	ref     ir.PolicyRef
	members []*ir.Policy
	rules   int
}

// Successors translates every imported policy of set. Policies admitc
// wrote itself are not imported and are left to Generate.
func Successors(set *ir.PolicySet, check AutogenCheck) []Translation {
	var out []Translation
	used := map[string]bool{}
	for _, f := range families(set) {
		out = append(out, translate(f, check, used))
	}
	return out
}

// families groups the imported policies by source rule, in IR order.
func families(set *ir.PolicySet) []*family {
	var order []*family
	byKey := map[string]*family{}
	rules := map[string]map[string]bool{}
	count := func(ref ir.PolicyRef) {
		pk := policyKey(ref)
		if rules[pk] == nil {
			rules[pk] = map[string]bool{}
		}
		rules[pk][rootRule(ref)] = true
	}
	for _, sk := range set.Skipped {
		count(sk.From)
	}
	for i := range set.Policies {
		p := &set.Policies[i]
		if !p.Imported() {
			continue
		}
		ref := ir.PolicyRef{Kind: "admission policy", Name: p.Name}
		if p.From != nil {
			ref = *p.From
		}
		count(ref)
		key := policyKey(ref) + "|" + rootRule(ref)
		f := byKey[key]
		if f == nil {
			root := ref
			root.Rule, root.AutogenOf = rootRule(ref), ""
			f = &family{ref: root}
			byKey[key] = f
			order = append(order, f)
		}
		if ref.AutogenOf == "" {
			f.members = append([]*ir.Policy{p}, f.members...)
		} else {
			f.members = append(f.members, p)
		}
	}
	for _, f := range order {
		f.rules = len(rules[policyKey(f.ref)])
	}
	return order
}

func policyKey(ref ir.PolicyRef) string { return ref.Kind + "|" + ref.Namespace + "|" + ref.Name }

// rootRule is the rule a policy was read from: the rule autogen copied
// for an autogen rule, "" for ruleless kinds.
func rootRule(ref ir.PolicyRef) string {
	if ref.Rule != "" && ref.AutogenOf != "" {
		return ref.AutogenOf
	}
	return ref.Rule
}

// translate emits one family: the idiomatic form (one policy with Kyverno's
// autogen) when check accepts it, else every member explicitly.
func translate(f *family, check AutogenCheck, used map[string]bool) Translation {
	t := Translation{From: f.ref}
	for _, p := range f.members {
		if why := successorRefusal(p); why != "" {
			t.Refusal = why
			return t
		}
	}
	base, note := baseName(f)
	if note != "" {
		t.Notes = append(t.Notes, note)
	}
	if len(f.members) > 1 && f.members[0].From != nil && f.members[0].From.AutogenOf == "" && check != nil {
		candidate := successorObject(f.members[0], unique(base, used, nil), podOnly)
		if controllers := autogenControllers(f.members[1:]); len(controllers) > 0 {
			setControllers(candidate.(*unstructured.Unstructured), controllers)
			why := check(candidate, f.members)
			if why == "" {
				name := unique(base, used, &t.Notes)
				t.Successors = []Successor{{Name: name, Kind: kindOf(f.members[0]), Object: candidate, Covers: f.members}}
				return t
			}
			t.Notes = append(t.Notes, fmt.Sprintf("autogen written out: Kyverno's autogen of a %s would not decide as the %s's autogen rules do (%s), so each autogen rule is its own policy with autogen off", kindOf(f.members[0]), f.ref.Kind, why))
		}
	}
	for _, p := range f.members {
		name := unique(memberName(base, f, p), used, &t.Notes)
		obj := successorObject(p, name, keepResources)
		setControllers(obj.(*unstructured.Unstructured), []string{})
		t.Successors = append(t.Successors, Successor{Name: name, Kind: kindOf(p), Object: obj, Covers: []*ir.Policy{p}})
	}
	return t
}

// successorRefusal says why an imported policy has no Kyverno successor.
func successorRefusal(p *ir.Policy) string {
	switch {
	case p.ParamKind != nil:
		return paramKindRefusal(p)
	case len(p.Bindings) == 0:
		return "the admission policy has no binding, so it judges nothing; a successor would judge every matched request"
	case len(p.Bindings) > 1:
		return fmt.Sprintf("the admission policy has %d bindings with their own scopes and actions; a ValidatingPolicy has one scope and one set of actions (split it, one policy per binding)", len(p.Bindings))
	case p.Bindings[0].ParamRef != nil:
		return "the binding's paramRef: a ValidatingPolicy has no parameters"
	}
	_, why := foldBinding(p.MatchConstraints, p.Bindings[0].MatchResources)
	return why
}

// paramKindRefusal says, in the source policy's terms, why a policy that
// reads a parameter object has no successor, and where it is translated.
func paramKindRefusal(p *ir.Policy) string {
	what := "paramKind"
	switch {
	case p.From != nil && p.From.ParamsContext != "":
		what = fmt.Sprintf("context.configMap %q (read as the policy's paramKind ConfigMap)", p.From.ParamsContext)
	case p.From != nil && p.From.Rule != "":
		what = "validate.cel.paramKind"
	}
	return what + ": a ValidatingPolicy has no paramKind (Kyverno's CEL policies read other objects with resource.Get; admitc does not rewrite a paramRef into that call); " +
		"the ValidatingAdmissionPolicy admitc writes for the API server keeps it, its binding's paramRef naming the object (migrate's vap.yaml, compile --backend vap)"
}

// foldBinding is the policy's matchConstraints narrowed by its binding's
// matchResources, when one MatchResources says exactly both: selectors
// are conjunctions of requirements and exclusions a union, so those fold;
// a binding that names its own resources folds only when they are the
// policy's.
func foldBinding(c, b *ir.MatchResources) (*ir.MatchResources, string) {
	if b == nil {
		return c, ""
	}
	out := *c
	if len(b.ResourceRules) > 0 && fmt.Sprint(b.ResourceRules) != fmt.Sprint(c.ResourceRules) {
		return nil, "the binding's matchResources.resourceRules narrow the policy's resources; their intersection with matchConstraints is not one list of rules (refused rather than approximated)"
	}
	out.NamespaceSelector = ir.AndSelectors(c.NamespaceSelector, b.NamespaceSelector)
	out.ObjectSelector = ir.AndSelectors(c.ObjectSelector, b.ObjectSelector)
	out.ExcludeResourceRules = append(append([]ir.ResourceRule{}, c.ExcludeResourceRules...), b.ExcludeResourceRules...)
	if len(out.ExcludeResourceRules) == 0 {
		out.ExcludeResourceRules = nil
	}
	return &out, ""
}

func kindOf(p *ir.Policy) string {
	switch {
	case p.Kind == ir.Mutating:
		return "MutatingPolicy"
	case p.From != nil && (p.From.Kind == "Policy" || p.From.Kind == "NamespacedValidatingPolicy"):
		return "NamespacedValidatingPolicy"
	}
	return "ValidatingPolicy"
}

// resources says what a successor's constraints keep: everything, or, for
// the candidate of Kyverno's autogen (which needs exactly core/v1 pods),
// pods without their subresources.
type resources int

const (
	keepResources resources = iota
	podOnly
)

// successorObject is the Kyverno policy for the imported policy p.
func successorObject(p *ir.Policy, name string, r resources) runtime.Object {
	mc, _ := foldBinding(p.MatchConstraints, p.Bindings[0].MatchResources)
	if r == podOnly {
		mc = podsOnly(mc)
	}
	meta := metav1.ObjectMeta{Name: name, Labels: backends.Labels()}
	if kindOf(p) == "NamespacedValidatingPolicy" {
		meta.Namespace = p.From.Namespace
	}
	var obj runtime.Object
	if p.Kind == ir.Mutating {
		obj = &kpolv1.MutatingPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: kpolv1.SchemeGroupVersion.String(), Kind: "MutatingPolicy"},
			ObjectMeta: meta,
			Spec: kpolv1.MutatingPolicySpec{
				MatchConstraints: apiconv.Emit(mc), FailurePolicy: backends.FailurePolicy(p.FailurePolicy),
				MatchConditions: successorConditions(p.MatchConditions), Variables: backends.Variables(p.Variables),
				Mutations: mutations(p.Mutations), ReinvocationPolicy: admissionregistrationv1.ReinvocationPolicyType(p.ReinvocationPolicy),
			},
		}
	} else {
		obj = &kpolv1.ValidatingPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: kpolv1.SchemeGroupVersion.String(), Kind: kindOf(p)},
			ObjectMeta: meta,
			Spec: kpolv1.ValidatingPolicySpec{
				MatchConstraints: apiconv.Emit(mc), Validations: backends.Validations(p.Validations),
				FailurePolicy: backends.FailurePolicy(p.FailurePolicy), AuditAnnotations: backends.AuditAnnotations(p.AuditAnnotations),
				MatchConditions: successorConditions(p.MatchConditions), Variables: backends.Variables(p.Variables),
				ValidationAction: validationActions(p.Bindings[0].Actions),
			},
		}
	}
	cleanedObj, err := cleaned(obj)
	if err != nil {
		// The objects are built from plain data; encoding cannot fail.
		panic(err)
	}
	return cleanedObj
}

func validationActions(as []ir.Action) []admissionregistrationv1.ValidationAction {
	out := make([]admissionregistrationv1.ValidationAction, len(as))
	for i, a := range as {
		out[i] = admissionregistrationv1.ValidationAction(a)
	}
	return out
}

// successorConditions are the matchConditions, the generated match
// condition renamed (the importer reserves its name); a name already taken
// gets a number.
func successorConditions(cs []ir.NamedExpression) []admissionregistrationv1.MatchCondition {
	out := backends.MatchConditions(cs)
	taken := map[string]bool{}
	for _, c := range out {
		taken[c.Name] = true
	}
	for i := range out {
		if out[i].Name != importedMatchCondition {
			continue
		}
		name := successorMatchCondition
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s-%d", successorMatchCondition, n)
		}
		out[i].Name, taken[name] = name, true
	}
	return out
}

func mutations(ms []ir.Mutation) []admissionregistrationv1alpha1.Mutation {
	var out []admissionregistrationv1alpha1.Mutation
	for _, m := range ms {
		if m.PatchType == ir.ApplyConfiguration {
			out = append(out, admissionregistrationv1alpha1.Mutation{PatchType: admissionregistrationv1alpha1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1alpha1.ApplyConfiguration{Expression: m.Expression}})
			continue
		}
		out = append(out, admissionregistrationv1alpha1.Mutation{PatchType: admissionregistrationv1alpha1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1alpha1.JSONPatch{Expression: m.Expression}})
	}
	return out
}

// podsOnly narrows constraints to core/v1 pods, the shape Kyverno's
// autogen of a ValidatingPolicy needs.
func podsOnly(mc *ir.MatchResources) *ir.MatchResources {
	out := *mc
	out.ResourceRules = nil
	for _, r := range mc.ResourceRules {
		if len(r.APIGroups) == 1 && (r.APIGroups[0] == "" || r.APIGroups[0] == "*") && strings.Contains(strings.Join(r.Resources, ","), "pods") {
			r.APIGroups, r.APIVersions, r.Resources = []string{""}, []string{"v1"}, []string{"pods"}
			out.ResourceRules = append(out.ResourceRules, r)
		}
	}
	return &out
}

// celControllers are the pod controllers Kyverno's ValidatingPolicy
// autogen knows, by resource.
var celControllers = map[string]bool{"daemonsets": true, "deployments": true, "jobs": true, "replicasets": true, "statefulsets": true, "cronjobs": true}

// autogenControllers are the controllers the twins match that Kyverno's
// ValidatingPolicy autogen can generate, sorted.
func autogenControllers(twins []*ir.Policy) []string {
	seen := map[string]bool{}
	for _, p := range twins {
		for _, r := range p.MatchConstraints.ResourceRules {
			for _, res := range r.Resources {
				if celControllers[res] {
					seen[res] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// setControllers writes spec.autogen.podControllers.controllers (an empty
// list turns Kyverno's autogen off; the Go field is omitempty, so it is
// set on the map).
func setControllers(u *unstructured.Unstructured, controllers []string) {
	list := make([]any, len(controllers))
	for i, c := range controllers {
		list[i] = c
	}
	_ = unstructured.SetNestedSlice(u.Object, list, "spec", "autogen", "podControllers", "controllers")
}
