package kyverno

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/internal/apiresources"
	"github.com/admitc/admitc/ir"
)

// A Kyverno installation keeps some requests from every policy before any
// policy sees them (pkg/webhooks/handlers/filter.go, pkg/config): requests
// by the users and groups of its ConfigMap's excludeGroups and
// excludeUsernames, requests its resourceFilters name ([kind,namespace,name]
// against the resource's top-level kind, the subresource, the request's
// namespace and name; config.ToFilter), and its own kinds
// (webhookutils.ExcludeKyvernoResources); its webhook configurations also
// leave out the namespaces of config.webhooks' namespaceSelector. A
// translated policy enforced by the API server or by admitc serve must leave
// out the same requests, or it judges kube-proxy in kube-system where
// Kyverno never did. `kyverno test` and `kyverno apply` apply none of them
// (their configuration is empty), so neither does admitc verify.

// FiltersCondition names the match condition that leaves out what
// resourceFilters name and binding exclusions cannot say.
const FiltersCondition = "kyverno-resource-filters"

// UsersCondition names the match condition that leaves out the requests of
// excludeGroups and excludeUsernames.
const UsersCondition = "kyverno-excluded-users"

// Filters are what a Kyverno installation keeps from its policies.
type Filters struct {
	// Source says where the filters come from, for reports.
	Source string
	// Resources are resourceFilters entries, in the ConfigMap's order.
	Resources []ResourceFilter
	// ExcludeGroups and ExcludeUsernames are excluded requesters (Kyverno
	// wildcards); IncludeGroups and IncludeUsernames ("!name" entries) are
	// judged even when also excluded.
	ExcludeGroups, IncludeGroups, ExcludeUsernames, IncludeUsernames []string
	// NamespaceSelector and ObjectSelector are config.webhooks': the
	// requests Kyverno's webhook configurations send at all.
	NamespaceSelector, ObjectSelector *metav1.LabelSelector
}

// ResourceFilter is one resourceFilters entry, [Kind,Namespace,Name].
type ResourceFilter struct{ Kind, Namespace, Name string }

func (f ResourceFilter) String() string { return "[" + f.Kind + "," + f.Namespace + "," + f.Name + "]" }

// chartNamespace is the namespace and release name the chart's defaults
// are rendered for (helm install kyverno kyverno/kyverno -n kyverno).
const chartNamespace = "kyverno"

// chartResourceFilters are config.resourceFilters of Kyverno v1.19.1's Helm
// chart (charts/kyverno/values.yaml), rendered for release kyverno in
// namespace kyverno, after the namespace entry that excludeKyvernoNamespace
// prepends; TestDefaultFiltersAreTheChartDefaults renders the chart's own
// from the module cache.
var chartResourceFilters = strings.Join([]string{
	`[*/*,kyverno,*]`,
	`[Event,*,*]`,
	`[*/*,kube-system,*]`,
	`[*/*,kube-public,*]`,
	`[*/*,kube-node-lease,*]`,
	`[Node,*,*]`,
	`[Node/?*,*,*]`,
	`[APIService,*,*]`,
	`[APIService/?*,*,*]`,
	`[TokenReview,*,*]`,
	`[SubjectAccessReview,*,*]`,
	`[SelfSubjectAccessReview,*,*]`,
	`[Binding,*,*]`,
	`[Pod/binding,*,*]`,
	`[ReplicaSet,*,*]`,
	`[ReplicaSet/?*,*,*]`,
	`[EphemeralReport,*,*]`,
	`[ClusterEphemeralReport,*,*]`,
	`[ClusterRole,*,kyverno:admission-controller]`,
	`[ClusterRole,*,kyverno:admission-controller:core]`,
	`[ClusterRole,*,kyverno:admission-controller:additional]`,
	`[ClusterRole,*,kyverno:background-controller]`,
	`[ClusterRole,*,kyverno:background-controller:core]`,
	`[ClusterRole,*,kyverno:background-controller:additional]`,
	`[ClusterRole,*,kyverno:cleanup-controller]`,
	`[ClusterRole,*,kyverno:cleanup-controller:core]`,
	`[ClusterRole,*,kyverno:cleanup-controller:additional]`,
	`[ClusterRole,*,kyverno:reports-controller]`,
	`[ClusterRole,*,kyverno:reports-controller:core]`,
	`[ClusterRole,*,kyverno:reports-controller:additional]`,
	`[ClusterRoleBinding,*,kyverno:admission-controller]`,
	`[ClusterRoleBinding,*,kyverno:background-controller]`,
	`[ClusterRoleBinding,*,kyverno:cleanup-controller]`,
	`[ClusterRoleBinding,*,kyverno:reports-controller]`,
	`[ServiceAccount,kyverno,kyverno-admission-controller]`,
	`[ServiceAccount/?*,kyverno,kyverno-admission-controller]`,
	`[ServiceAccount,kyverno,kyverno-background-controller]`,
	`[ServiceAccount/?*,kyverno,kyverno-background-controller]`,
	`[ServiceAccount,kyverno,kyverno-cleanup-controller]`,
	`[ServiceAccount/?*,kyverno,kyverno-cleanup-controller]`,
	`[ServiceAccount,kyverno,kyverno-reports-controller]`,
	`[ServiceAccount/?*,kyverno,kyverno-reports-controller]`,
	`[Role,kyverno,kyverno:admission-controller]`,
	`[Role,kyverno,kyverno:background-controller]`,
	`[Role,kyverno,kyverno:cleanup-controller]`,
	`[Role,kyverno,kyverno:reports-controller]`,
	`[RoleBinding,kyverno,kyverno:admission-controller]`,
	`[RoleBinding,kyverno,kyverno:background-controller]`,
	`[RoleBinding,kyverno,kyverno:cleanup-controller]`,
	`[RoleBinding,kyverno,kyverno:reports-controller]`,
	`[ConfigMap,kyverno,kyverno]`,
	`[ConfigMap,kyverno,kyverno-metrics]`,
	`[Deployment,kyverno,kyverno-admission-controller]`,
	`[Deployment/?*,kyverno,kyverno-admission-controller]`,
	`[Deployment,kyverno,kyverno-background-controller]`,
	`[Deployment/?*,kyverno,kyverno-background-controller]`,
	`[Deployment,kyverno,kyverno-cleanup-controller]`,
	`[Deployment/?*,kyverno,kyverno-cleanup-controller]`,
	`[Deployment,kyverno,kyverno-reports-controller]`,
	`[Deployment/?*,kyverno,kyverno-reports-controller]`,
	`[Pod,kyverno,kyverno-admission-controller-*]`,
	`[Pod/?*,kyverno,kyverno-admission-controller-*]`,
	`[Pod,kyverno,kyverno-background-controller-*]`,
	`[Pod/?*,kyverno,kyverno-background-controller-*]`,
	`[Pod,kyverno,kyverno-cleanup-controller-*]`,
	`[Pod/?*,kyverno,kyverno-cleanup-controller-*]`,
	`[Pod,kyverno,kyverno-reports-controller-*]`,
	`[Pod/?*,kyverno,kyverno-reports-controller-*]`,
	`[Job,kyverno,kyverno-hook-pre-delete]`,
	`[Job/?*,kyverno,kyverno-hook-pre-delete]`,
	`[NetworkPolicy,kyverno,kyverno-admission-controller]`,
	`[NetworkPolicy/?*,kyverno,kyverno-admission-controller]`,
	`[NetworkPolicy,kyverno,kyverno-background-controller]`,
	`[NetworkPolicy/?*,kyverno,kyverno-background-controller]`,
	`[NetworkPolicy,kyverno,kyverno-cleanup-controller]`,
	`[NetworkPolicy/?*,kyverno,kyverno-cleanup-controller]`,
	`[NetworkPolicy,kyverno,kyverno-reports-controller]`,
	`[NetworkPolicy/?*,kyverno,kyverno-reports-controller]`,
	`[PodDisruptionBudget,kyverno,kyverno-admission-controller]`,
	`[PodDisruptionBudget/?*,kyverno,kyverno-admission-controller]`,
	`[PodDisruptionBudget,kyverno,kyverno-background-controller]`,
	`[PodDisruptionBudget/?*,kyverno,kyverno-background-controller]`,
	`[PodDisruptionBudget,kyverno,kyverno-cleanup-controller]`,
	`[PodDisruptionBudget/?*,kyverno,kyverno-cleanup-controller]`,
	`[PodDisruptionBudget,kyverno,kyverno-reports-controller]`,
	`[PodDisruptionBudget/?*,kyverno,kyverno-reports-controller]`,
	`[Service,kyverno,kyverno-svc]`,
	`[Service/?*,kyverno,kyverno-svc]`,
	`[Service,kyverno,kyverno-svc-metrics]`,
	`[Service/?*,kyverno,kyverno-svc-metrics]`,
	`[Service,kyverno,kyverno-background-controller-metrics]`,
	`[Service/?*,kyverno,kyverno-background-controller-metrics]`,
	`[Service,kyverno,kyverno-cleanup-controller]`,
	`[Service/?*,kyverno,kyverno-cleanup-controller]`,
	`[Service,kyverno,kyverno-cleanup-controller-metrics]`,
	`[Service/?*,kyverno,kyverno-cleanup-controller-metrics]`,
	`[Service,kyverno,kyverno-reports-controller-metrics]`,
	`[Service/?*,kyverno,kyverno-reports-controller-metrics]`,
	`[ServiceMonitor,kyverno,kyverno-admission-controller]`,
	`[ServiceMonitor,kyverno,kyverno-background-controller]`,
	`[ServiceMonitor,kyverno,kyverno-cleanup-controller]`,
	`[ServiceMonitor,kyverno,kyverno-reports-controller]`,
	`[Secret,kyverno,kyverno-svc.kyverno.svc.*]`,
	`[Secret,kyverno,kyverno-cleanup-controller.kyverno.svc.*]`,
}, "")

// DefaultFilters are the filters of a Kyverno v1.19 installation from its
// Helm chart with the chart's values (release kyverno, namespace kyverno).
func DefaultFilters() *Filters {
	return &Filters{
		Source:        "Kyverno v1.19 Helm chart defaults (release kyverno in namespace kyverno)",
		Resources:     parseResourceFilters(chartResourceFilters),
		ExcludeGroups: []string{"system:nodes"},
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", chartNamespace}},
		}},
	}
}

// ReadFilters reads Kyverno's ConfigMap (kubectl get configmap kyverno -n
// kyverno -o yaml) as Kyverno's configuration.load reads it. excludeRoles
// and excludeClusterRoles are refused: Kyverno resolves a user's roles from
// RoleBindings at admission, which an admission policy cannot.
func ReadFilters(name string, data []byte) (*Filters, error) {
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return nil, fmt.Errorf("%s: not a ConfigMap: %v", name, err)
	}
	if cm.Kind != "ConfigMap" {
		return nil, fmt.Errorf("%s: kind %q: --kyverno-filters takes Kyverno's ConfigMap (kubectl get configmap kyverno -n kyverno -o yaml), \"default\" or \"none\"", name, cm.Kind)
	}
	for _, key := range []string{"excludeRoles", "excludeClusterRoles"} {
		if strings.TrimSpace(cm.Data[key]) != "" {
			return nil, fmt.Errorf("%s: data.%s: Kyverno resolves a requester's roles from RoleBindings at admission, which an admission policy cannot; admitc cannot leave these requests out, so it refuses rather than judge them (remove data.%s from this copy to judge them)", name, key, key)
		}
	}
	f := &Filters{Source: "Kyverno ConfigMap " + name, Resources: parseResourceFilters(cm.Data["resourceFilters"])}
	f.ExcludeGroups, f.IncludeGroups = parseExclusions(cm.Data["excludeGroups"])
	f.ExcludeUsernames, f.IncludeUsernames = parseExclusions(cm.Data["excludeUsernames"])
	if w := strings.TrimSpace(cm.Data["webhooks"]); w != "" {
		var hooks struct {
			NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
			ObjectSelector    *metav1.LabelSelector `json:"objectSelector"`
		}
		if err := json.Unmarshal([]byte(w), &hooks); err != nil {
			return nil, fmt.Errorf("%s: data.webhooks: %v", name, err)
		}
		f.NamespaceSelector, f.ObjectSelector = hooks.NamespaceSelector, hooks.ObjectSelector
	}
	return f, nil
}

var filterEntry = regexp.MustCompile(`\[([^\[\]]*)\]`)

// parseResourceFilters is Kyverno's parseKinds (pkg/config/types.go): each
// [..] entry split on commas, a missing namespace or name being "".
func parseResourceFilters(in string) []ResourceFilter {
	var out []ResourceFilter
	for _, m := range filterEntry.FindAllStringSubmatch(in, -1) {
		parts := strings.Split(m[1], ",")
		var f ResourceFilter
		switch len(parts) {
		case 1:
			f = ResourceFilter{Kind: parts[0]}
		case 2:
			f = ResourceFilter{Kind: parts[0], Namespace: parts[1]}
		case 3:
			f = ResourceFilter{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
		default:
			continue // Kyverno keeps the previous entry again; nothing new is filtered
		}
		if f.Kind == "" {
			continue // newFilter("") is the empty filter, which filters nothing
		}
		out = append(out, f)
	}
	return out
}

// parseExclusions is Kyverno's parseExclusions: comma-separated names,
// "!name" being an inclusion.
func parseExclusions(in string) (exclusions, inclusions []string) {
	for _, s := range strings.Split(in, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "!"); ok {
			if rest = strings.TrimSpace(rest); rest != "" {
				inclusions = append(inclusions, rest)
			}
			continue
		}
		exclusions = append(exclusions, s)
	}
	return exclusions, inclusions
}

// kyvernoKinds are Kyverno's own kinds: its report kinds, which the chart
// filters, and UpdateRequest, which Kyverno's webhook always leaves out.
var kyvernoKinds = []apiresources.Resource{
	{Group: "reports.kyverno.io", Version: "v1", Resource: "ephemeralreports", Kind: "EphemeralReport", Namespaced: true, Preferred: true},
	{Group: "reports.kyverno.io", Version: "v1", Resource: "clusterephemeralreports", Kind: "ClusterEphemeralReport", Preferred: true},
	{Group: "kyverno.io", Version: "v2", Resource: "updaterequests", Kind: "UpdateRequest", Namespaced: true, Preferred: true},
}

// resourcesOfKind resolves a filter's kind to the resources serving it.
func resourcesOfKind(group, kind string) []apiresources.Resource {
	out := apiresources.ByKind(group, kind)
	for _, r := range kyvernoKinds {
		if r.Kind == kind && (group == "*" || group == r.Group) {
			out = append(out, r)
		}
	}
	return out
}

// Summary says in a few lines what the filters leave out: the namespaces
// left out whole, the other resourceFilters entries, the requesters, and
// the webhooks' selectors.
func (f *Filters) Summary() []string {
	namespaces := f.ExcludedNamespaces()
	var out []string
	if len(namespaces) > 0 {
		out = append(out, "namespaces: "+strings.Join(namespaces, ", "))
	}
	var entries []string
	covered := 0
	for _, r := range f.Resources {
		switch {
		case isEveryResource(r.Kind) && r.Name == "*" && slices.Contains(namespaces, r.Namespace):
		case !hasWildcard(r.Namespace) && slices.Contains(namespaces, r.Namespace):
			covered++
		default:
			entries = append(entries, r.String())
		}
	}
	if len(entries) > 0 {
		out = append(out, "resourceFilters: "+strings.Join(entries, " "))
	}
	if covered > 0 {
		out = append(out, fmt.Sprintf("resourceFilters: %d entries for objects in those namespaces", covered))
	}
	if users := requesters(f); users != "" {
		out = append(out, "requesters: "+users)
	}
	if f.ObjectSelector != nil {
		out = append(out, "webhooks objectSelector: "+metav1.FormatLabelSelector(f.ObjectSelector))
	}
	return out
}

// requesters says which requesters the filters leave out, and which they
// judge anyway.
func requesters(f *Filters) string {
	var parts []string
	if len(f.ExcludeGroups) > 0 {
		parts = append(parts, "groups "+strings.Join(f.ExcludeGroups, ", "))
	}
	if len(f.ExcludeUsernames) > 0 {
		parts = append(parts, "users "+strings.Join(f.ExcludeUsernames, ", "))
	}
	if len(f.IncludeGroups)+len(f.IncludeUsernames) > 0 {
		parts = append(parts, "except "+strings.Join(append(slices.Clone(f.IncludeGroups), f.IncludeUsernames...), ", "))
	}
	return strings.Join(parts, "; ")
}

// ExcludedNamespaces are the namespaces whose every request the filters
// leave out (an entry [*/*,NAMESPACE,*], or a NotIn of the webhooks'
// namespaceSelector), sorted.
func (f *Filters) ExcludedNamespaces() []string {
	set := map[string]bool{}
	for _, r := range f.Resources {
		if isEveryResource(r.Kind) && r.Name == "*" && !hasWildcard(r.Namespace) && r.Namespace != "" {
			set[r.Namespace] = true
		}
	}
	if s := f.NamespaceSelector; s != nil && len(s.MatchLabels) == 0 {
		for _, e := range s.MatchExpressions {
			if e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpNotIn {
				for _, v := range e.Values {
					set[v] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// isEveryResource says whether a kind selector covers every kind and
// subresource ("*/*"; a bare "*" covers no subresource).
func isEveryResource(kind string) bool {
	g, v, k, s := parseKindSelector(kind)
	return g == "*" && v == "*" && k == "*" && s == "*"
}

// Apply returns set with every Kyverno policy's bindings and match
// conditions leaving out what f leaves out; other policies are unchanged
// and set itself is not modified. A filter that neither a binding nor a
// match condition can say exactly is an error naming it.
func (f *Filters) Apply(set *ir.PolicySet) (*ir.PolicySet, error) {
	plan, err := f.plan()
	if err != nil {
		return nil, err
	}
	out := *set
	out.Policies = slices.Clone(set.Policies)
	for i := range out.Policies {
		if p := &out.Policies[i]; p.Type == Type {
			plan.apply(p)
		}
	}
	return &out, nil
}

// filterPlan is what the filters become in admission terms.
type filterPlan struct {
	namespaces        []string
	namespaceSelector *ir.LabelSelector
	objectSelector    *ir.LabelSelector
	exclusions        []ir.ResourceRule
	// conditions are CEL, each true when a request is filtered.
	conditions []string
	users      string
}

func (f *Filters) plan() (*filterPlan, error) {
	p := &filterPlan{namespaces: f.ExcludedNamespaces(), objectSelector: apiconv.FromSelector(f.ObjectSelector)}
	p.namespaceSelector = f.otherNamespaceRequirements()
	for _, r := range f.Resources {
		if err := p.add(r); err != nil {
			return nil, fmt.Errorf("%s: resourceFilters entry %s: %w", f.Source, r, err)
		}
	}
	for _, r := range kyvernoKinds {
		p.exclusions = append(p.exclusions, ir.ResourceRule{APIGroups: []string{r.Group}, APIVersions: []string{"*"}, Resources: []string{r.Resource, r.Resource + "/*"}, Operations: []ir.Operation{"*"}, Scope: "*"})
	}
	p.users = f.usersCondition()
	return p, nil
}

// otherNamespaceRequirements are the webhooks' namespaceSelector beyond the
// NotIn on namespace names ExcludedNamespaces already holds.
func (f *Filters) otherNamespaceRequirements() *ir.LabelSelector {
	s := f.NamespaceSelector
	if s == nil {
		return nil
	}
	rest := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		if len(s.MatchLabels) == 0 && e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpNotIn {
			continue
		}
		rest.MatchExpressions = append(rest.MatchExpressions, e)
	}
	return apiconv.FromSelector(rest)
}

// add turns one resource filter into binding exclusions where they say it
// exactly, else into a match condition.
func (p *filterPlan) add(r ResourceFilter) error {
	if isEveryResource(r.Kind) && r.Name == "*" && slices.Contains(p.namespaces, r.Namespace) {
		return nil // the namespaceSelector leaves the namespace out
	}
	if !hasWildcard(r.Namespace) && slices.Contains(p.namespaces, r.Namespace) {
		return nil // in a namespace left out whole
	}
	g, v, kind, sub := parseKindSelector(r.Kind)
	if kind == "" {
		return fmt.Errorf("%q is not a kind selector", r.Kind)
	}
	var resources []apiresources.Resource
	if !hasWildcard(kind) {
		if resources = resourcesOfKind(g, kind); len(resources) == 0 {
			return fmt.Errorf("kind %s is not served by Kubernetes %s nor is it one of Kyverno's; admitc cannot tell which resources to leave out (remove the entry from this copy of the ConfigMap if no such resources exist in the cluster)", kind, strings.TrimPrefix(apiresources.Release, "v"))
		}
	}
	subs, subsExact := subresourceNames(sub)
	if r.Namespace == "*" && (v == "*" || !hasWildcard(v)) && !hasWildcard(kind) && subsExact && (r.Name == "*" || !hasWildcard(r.Name) && r.Name != "") {
		p.exclusions = append(p.exclusions, exclusionRules(resources, v, subs, r.Name)...)
		return nil
	}
	p.conditions = append(p.conditions, resourceFilterCEL(r, resources))
	return nil
}

// subresourceNames are the resource suffixes a filter's subresource pattern
// covers ("" the resource itself, "/*" every subresource), and whether
// they cover it exactly.
func subresourceNames(sub string) ([]string, bool) {
	switch {
	case sub == "":
		return []string{""}, true
	case sub == "*":
		return []string{"", "/*"}, true
	case sub == "?*":
		return []string{"/*"}, true
	case !hasWildcard(sub):
		return []string{"/" + sub}, true
	}
	return nil, false
}

func exclusionRules(resources []apiresources.Resource, version string, subs []string, name string) []ir.ResourceRule {
	var out []ir.ResourceRule
	for _, res := range resources {
		rule := ir.ResourceRule{APIGroups: []string{res.Group}, APIVersions: []string{version}, Operations: []ir.Operation{"*"}, Scope: "*"}
		for _, s := range subs {
			rule.Resources = append(rule.Resources, res.Resource+s)
		}
		if name != "*" {
			rule.ResourceNames = []string{name}
		}
		out = append(out, rule)
	}
	return out
}

// CEL for the request as Kyverno's resource filters read it.
const (
	celRequestNamespace = `request.?namespace.orValue("")`
	celRequestName      = `request.?name.orValue("")`
)

// resourceFilterCEL is true when Kyverno's ToFilter filters the request: its
// resource (Kyverno reads the top-level kind of the request's resource),
// subresource, namespace (a Namespace is also filtered by its own name)
// and name.
func resourceFilterCEL(r ResourceFilter, resources []apiresources.Resource) string {
	_, v, _, sub := parseKindSelector(r.Kind)
	var parts []string
	if len(resources) > 0 {
		var alts []string
		for _, res := range resources {
			alts = append(alts, fmt.Sprintf("request.resource.group == %s && request.resource.resource == %s", strconv.Quote(res.Group), strconv.Quote(res.Resource)))
		}
		parts = append(parts, paren(strings.Join(alts, " || ")))
	} else if !isEveryResource(r.Kind) {
		_, _, kind, _ := parseKindSelector(r.Kind)
		parts = append(parts, glob(kind, "request.kind.kind"))
	}
	parts = append(parts, glob(v, "request.resource.version"), glob(sub, celSubres))
	ns := glob(r.Namespace, celRequestNamespace)
	if ns != "true" {
		ns = paren(ns + ` || request.kind.group == "" && request.kind.kind == "Namespace" && ` + glob(r.Namespace, celRequestName))
	}
	parts = append(parts, ns, glob(r.Name, celRequestName))
	var kept []string
	for _, p := range parts {
		if p != "true" {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return "true"
	}
	return strings.Join(kept, " && ")
}

// usersCondition is true when Kyverno judges the requester: an inclusion
// matches, or no exclusion does (config.IsExcluded); "" when nothing is
// excluded.
func (f *Filters) usersCondition() string {
	excluded := requesterCEL(f.ExcludeGroups, f.ExcludeUsernames)
	if excluded == "" {
		return ""
	}
	out := "!" + paren(excluded)
	if included := requesterCEL(f.IncludeGroups, f.IncludeUsernames); included != "" {
		out = paren(included) + " || " + out
	}
	return out
}

func requesterCEL(groups, usernames []string) string {
	var parts []string
	for _, u := range usernames {
		parts = append(parts, glob(u, celUsername))
	}
	var literal, wild []string
	for _, g := range groups {
		if hasWildcard(g) {
			wild = append(wild, glob(g, "g"))
		} else {
			literal = append(literal, strconv.Quote(g))
		}
	}
	switch {
	case len(literal) == 1 && len(wild) == 0:
		parts = append(parts, literal[0]+" in "+celGroups)
	case len(literal)+len(wild) > 0:
		var in []string
		switch len(literal) {
		case 0:
		case 1:
			in = append(in, "g == "+literal[0])
		default:
			in = append(in, "g in ["+strings.Join(literal, ", ")+"]")
		}
		parts = append(parts, celGroups+".exists(g, "+strings.Join(append(in, wild...), " || ")+")")
	}
	return strings.Join(parts, " || ")
}

// apply narrows one Kyverno policy's bindings and match conditions.
func (p *filterPlan) apply(pol *ir.Policy) {
	exclusions := relevant(p.exclusions, pol.MatchConstraints)
	pol.Bindings = slices.Clone(pol.Bindings)
	for i := range pol.Bindings {
		b := &pol.Bindings[i]
		mr := ir.MatchResources{}
		if b.MatchResources != nil {
			mr = *b.MatchResources
		}
		mr.NamespaceSelector = ir.AndSelectors(mr.NamespaceSelector, notIn(p.namespaces))
		mr.NamespaceSelector = ir.AndSelectors(mr.NamespaceSelector, p.namespaceSelector)
		mr.ObjectSelector = ir.AndSelectors(mr.ObjectSelector, p.objectSelector)
		mr.ExcludeResourceRules = append(slices.Clone(mr.ExcludeResourceRules), exclusions...)
		b.MatchResources = &mr
	}
	var conds []ir.NamedExpression
	if len(p.conditions) > 0 {
		var neg []string
		for _, c := range p.conditions {
			neg = append(neg, "!"+paren(c))
		}
		conds = append(conds, ir.NamedExpression{Name: FiltersCondition, Expression: strings.Join(neg, " && "), Origin: pol.Origin})
	}
	if p.users != "" {
		conds = append(conds, ir.NamedExpression{Name: UsersCondition, Expression: p.users, Origin: pol.Origin})
	}
	if len(conds) > 0 {
		pol.MatchConditions = append(conds, pol.MatchConditions...)
	}
}

func notIn(namespaces []string) *ir.LabelSelector {
	if len(namespaces) == 0 {
		return nil
	}
	return &ir.LabelSelector{MatchExpressions: []ir.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: string(metav1.LabelSelectorOpNotIn), Values: namespaces}}}
}

// relevant are the exclusions that leave out something the policy
// matches: a Pod policy needs none of Event's.
func relevant(exclusions []ir.ResourceRule, mc *ir.MatchResources) []ir.ResourceRule {
	if mc == nil {
		return nil
	}
	var out []ir.ResourceRule
	for _, e := range exclusions {
		var kept []string
		for _, res := range e.Resources {
			one := e
			one.Resources = []string{res}
			if slices.ContainsFunc(mc.ResourceRules, func(r ir.ResourceRule) bool { return overlaps(one, r) }) {
				kept = append(kept, res)
			}
		}
		if len(kept) == 0 {
			continue
		}
		e.Resources = kept
		if n := len(out); n > 0 && sameButResources(out[n-1], e) {
			out[n-1].Resources = append(slices.Clone(out[n-1].Resources), kept...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// sameButResources says whether two exclusions differ in their resources
// only, so one rule can say both.
func sameButResources(a, b ir.ResourceRule) bool {
	a.Resources, b.Resources = nil, nil
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// overlaps says whether a request could match both rules' groups and
// resources.
func overlaps(a, b ir.ResourceRule) bool {
	return anyOverlap(a.APIGroups, b.APIGroups, func(x, y string) bool { return x == y }) &&
		anyOverlap(a.Resources, b.Resources, resourcesOverlap)
}

func anyOverlap(xs, ys []string, same func(x, y string) bool) bool {
	for _, x := range xs {
		for _, y := range ys {
			if x == "*" || y == "*" || same(x, y) {
				return true
			}
		}
	}
	return false
}

// resourcesOverlap compares resource names with "/*" and "*/sub" forms.
func resourcesOverlap(x, y string) bool {
	xr, xs, _ := strings.Cut(x, "/")
	yr, ys, _ := strings.Cut(y, "/")
	return (xr == yr || xr == "*" || yr == "*") && (xs == ys || xs == "*" && ys != "" || ys == "*" && xs != "")
}
