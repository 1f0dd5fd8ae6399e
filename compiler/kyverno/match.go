package kyverno

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
)

// A rule's match and exclude, lowered as Kyverno's engine decides them
// (pkg/engine/utils/match.go, pkg/utils/match): resourceRules that cover
// every kind the match names, the namespaceSelector (which a matchCondition
// cannot read: the API server gives match conditions no namespaceObject),
// and, unless those say it all, one CEL condition for the rest.

// CEL for the request's object metadata (the old object's on DELETE), its
// name (generateName when it has none), namespace (a Namespace's own name)
// and labels, as Kyverno reads them from the resource.
const (
	celMeta      = `(object != null ? object : oldObject).metadata`
	celName      = `(has(` + celMeta + `.name) && ` + celMeta + `.name != "" ? ` + celMeta + `.name : has(` + celMeta + `.generateName) ? ` + celMeta + `.generateName : "")`
	celNamespace = `(request.kind.kind == "Namespace" ? ` + celMeta + `.?name.orValue("") : ` + celRequestNamespace + `)`
	celSubres    = `request.?subResource.orValue("")`
	celUsername  = `request.userInfo.?username.orValue("")`
	celGroups    = `request.userInfo.?groups.orValue([])`
)

// celMap is the labels or annotations map as Kyverno reads it with
// unstructured's GetLabels and GetAnnotations: empty unless it is a map of
// strings.
func celMap(field string) string {
	f := celMeta + `.` + field
	return `(has(` + f + `) && type(` + f + `) == map && ` + f + `.all(k, type(` + f + `[k]) == string || ` + f + `[k] == null) ? ` + f + ` : {})`
}

// loweredMatch is what a rule's match and exclude become.
type loweredMatch struct {
	constraints *ir.MatchResources
	// unresolved are the kinds the match names that did not resolve.
	unresolved []ir.UnresolvedKind
	// condition is CEL that is true when Kyverno matches the request; empty
	// when the constraints decide alone.
	condition string
}

// refusal says why something cannot be lowered: the feature, where, and
// why, in the policy's terms, ending with what the policy's author can do.
type refusal struct{ feature, path, why string }

// withFix ends why with fix, what the author can do, unless why says
// already (a reason from the JMESPath translation names its own fix, which
// ends with keeping the rule under Kyverno).
func withFix(why, fix string) string {
	if strings.Contains(why, "under Kyverno") {
		return why
	}
	return why + "; " + fix
}

// lowerMatch lowers a rule's match and exclude; policyNamespace is a
// namespaced Policy's namespace, whose rules see only objects in it.
func (r *reader) lowerMatch(rule kyvernov1.Rule, path, policyNamespace string) (loweredMatch, *refusal) {
	if r.roles == nil {
		if f := userInfoRefusal(rule, path); f != nil {
			return loweredMatch{}, f
		}
	}
	match := filters(&rule.MatchResources)
	sel, f := namespaceSelector(rule, path)
	if f != nil {
		return loweredMatch{}, f
	}
	rules := r.resourceRules(&rule.MatchResources, path+".match")
	out := loweredMatch{constraints: &ir.MatchResources{ResourceRules: rules.rules, NamespaceSelector: apiconv.FromSelector(sel), MatchPolicy: ir.Equivalent}, unresolved: rules.unresolved}
	if simple(rule, match) && policyNamespace == "" {
		return out, nil
	}
	var parts []string
	if policyNamespace != "" {
		parts = append(parts, celNamespace+" == "+strconv.Quote(policyNamespace))
	}
	joiner := " || "
	if len(rule.MatchResources.All) > 0 {
		joiner = " && "
	}
	var ms []string
	for _, m := range match {
		ms = append(ms, paren(filterCEL(m, r.roles)))
	}
	parts = append(parts, paren(strings.Join(ms, joiner)))
	if ex := excludeCEL(rule.ExcludeResources, r.roles); ex != "" {
		parts = append(parts, "!"+paren(ex))
	}
	out.condition = strings.Join(parts, " && ")
	return out, nil
}

// filters are a match's resource filters: any, all, or the one legacy
// resources/subjects block.
func filters(m *kyvernov1.MatchResources) kyvernov1.ResourceFilters {
	switch {
	case len(m.Any) > 0:
		return m.Any
	case len(m.All) > 0:
		return m.All
	}
	return kyvernov1.ResourceFilters{{UserInfo: m.UserInfo, ResourceDescription: m.ResourceDescription}}
}

// simple reports whether resourceRules say all a match says: one filter of
// exact kinds and operations, no exclude.
func simple(rule kyvernov1.Rule, match kyvernov1.ResourceFilters) bool {
	if len(match) != 1 || (rule.ExcludeResources != nil && !isEmptyMatch(rule.ExcludeResources)) {
		return false
	}
	d := match[0]
	if d.Name != "" || len(d.Names) > 0 || len(d.Namespaces) > 0 || d.Annotations != nil || d.Selector != nil || d.NamespaceSelector != nil ||
		len(d.Subjects) > 0 || len(d.Roles) > 0 || len(d.ClusterRoles) > 0 || len(d.Kinds) == 0 {
		return false
	}
	for _, k := range d.Kinds {
		g, v, kind, sub := parseKindSelector(k)
		if hasWildcard(g) && g != "*" || hasWildcard(v) && v != "*" || hasWildcard(kind) || hasWildcard(sub) {
			return false
		}
	}
	return true
}

// matchConditionCause names, in the policy's terms, what in a rule's match
// or exclude needs a match condition (what makes simple false);
// policyNamespace is a namespaced Policy's namespace.
func matchConditionCause(rule kyvernov1.Rule, path, policyNamespace string) string {
	match := filters(&rule.MatchResources)
	switch {
	case policyNamespace != "":
		return fmt.Sprintf("a namespaced Policy's scope (its rules see only objects in namespace %s)", policyNamespace)
	case rule.ExcludeResources != nil && !isEmptyMatch(rule.ExcludeResources):
		return path + ".exclude"
	case len(match) != 1:
		return fmt.Sprintf("%s.match (%d filters)", path, len(match))
	}
	at := path + ".match"
	switch {
	case len(rule.MatchResources.Any) > 0:
		at += ".any[0]"
	case len(rule.MatchResources.All) > 0:
		at += ".all[0]"
	}
	d := match[0]
	for _, f := range []struct {
		set   bool
		field string
	}{
		{d.Name != "", "resources.name"}, {len(d.Names) > 0, "resources.names"}, {len(d.Namespaces) > 0, "resources.namespaces"},
		{d.Annotations != nil, "resources.annotations"}, {d.Selector != nil, "resources.selector"},
		{d.NamespaceSelector != nil, "resources.namespaceSelector"}, {len(match[0].Subjects) > 0, "subjects"},
		{len(d.Roles) > 0, "roles"}, {len(d.ClusterRoles) > 0, "clusterRoles"},
	} {
		if f.set {
			return at + "." + f.field
		}
	}
	if len(d.Kinds) == 0 {
		return at + ".resources.kinds (none: every kind)"
	}
	return at + ".resources.kinds (a wildcard)"
}

func isEmptyMatch(m *kyvernov1.MatchResources) bool {
	return len(m.Any) == 0 && len(m.All) == 0 && m.ResourceDescription.IsEmpty() && len(m.Roles) == 0 && len(m.ClusterRoles) == 0 && len(m.Subjects) == 0
}

// rolesMatch is Kyverno's checkUserInfo for roles and clusterRoles
// (pkg/utils/match/match.go): each list the filter names holds one of the
// user's, compared exactly.
func rolesMatch(ui kyvernov1.UserInfo, user *UserRoles) bool {
	holdsOne := func(filter, users []string) bool {
		for _, u := range users {
			if slices.Contains(filter, u) {
				return true
			}
		}
		return false
	}
	return (len(ui.Roles) == 0 || holdsOne(ui.Roles, user.Roles)) && (len(ui.ClusterRoles) == 0 || holdsOne(ui.ClusterRoles, user.ClusterRoles))
}

// userInfoRefusal refuses roles and clusterRoles: Kyverno resolves them
// from RoleBindings at admission, which a CEL expression cannot see.
func userInfoRefusal(rule kyvernov1.Rule, path string) *refusal {
	check := func(m *kyvernov1.MatchResources, at string) *refusal {
		if m == nil {
			return nil
		}
		for _, f := range append(kyvernov1.ResourceFilters{{UserInfo: m.UserInfo}}, append(m.Any, m.All...)...) {
			if len(f.Roles) > 0 || len(f.ClusterRoles) > 0 {
				return &refusal{"roles and clusterRoles", at, "Kyverno resolves a user's roles from RoleBindings and ClusterRoleBindings at admission; an admission policy sees only the user's name and groups (use subjects; admitc verify decides roles for a Kyverno test's userinfo file, as kyverno test does)"}
			}
		}
		return nil
	}
	if f := check(&rule.MatchResources, path+".match"); f != nil {
		return f
	}
	return check(rule.ExcludeResources, path+".exclude")
}

// namespaceSelector is the one namespaceSelector of a match, which the
// constraints can carry: a single filter's, or the merge of all filters'
// when all must match. An exclude's, or one of several any filters', is
// refused: matchConditions cannot read namespace labels.
func namespaceSelector(rule kyvernov1.Rule, path string) (*metav1.LabelSelector, *refusal) {
	if e := rule.ExcludeResources; e != nil {
		for _, f := range append(filters(e), kyvernov1.ResourceFilter{ResourceDescription: e.ResourceDescription}) {
			if f.NamespaceSelector != nil {
				return nil, &refusal{"exclude namespaceSelector", path + ".exclude", "an admission policy's matchConditions cannot read namespace labels (the API server gives them no namespaceObject), and a namespaceSelector cannot be negated in general: select the namespaces in match with a namespaceSelector instead, or keep this rule under Kyverno"}
			}
		}
	}
	match := filters(&rule.MatchResources)
	var out *metav1.LabelSelector
	for _, f := range match {
		if f.NamespaceSelector == nil {
			continue
		}
		if len(rule.MatchResources.Any) > 1 {
			return nil, &refusal{"namespaceSelector in one of several match.any filters", path + ".match.any", "a policy has one namespaceSelector, and matchConditions cannot read namespace labels; split the rule, one filter each"}
		}
		if out == nil {
			out = &metav1.LabelSelector{}
		}
		for k, v := range f.NamespaceSelector.MatchLabels {
			out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
		out.MatchExpressions = append(out.MatchExpressions, f.NamespaceSelector.MatchExpressions...)
	}
	if out != nil {
		sort.SliceStable(out.MatchExpressions, func(i, j int) bool { return out.MatchExpressions[i].Key < out.MatchExpressions[j].Key })
	}
	return out, nil
}

// excludeCEL is true when the exclude excludes the request: any filter
// (any), every filter (all), or the legacy block; an empty filter excludes
// nothing.
func excludeCEL(e *kyvernov1.MatchResources, roles *UserRoles) string {
	if e == nil || isEmptyMatch(e) {
		return ""
	}
	joiner := " || "
	if len(e.Any) == 0 && len(e.All) > 0 {
		joiner = " && "
	}
	var parts []string
	for _, f := range filters(e) {
		parts = append(parts, paren(filterCEL(f, roles)))
	}
	return strings.Join(parts, joiner)
}

// filterCEL is true when one resource filter matches the request
// (doesResourceMatchConditionBlock). An empty filter never matches. Its
// roles and clusterRoles are decided for the user's roles (nil only where
// the rule has none: lowerMatch refuses them otherwise).
func filterCEL(f kyvernov1.ResourceFilter, roles *UserRoles) string {
	d := f.ResourceDescription
	if d.IsEmpty() && len(f.Subjects) == 0 && len(f.Roles) == 0 && len(f.ClusterRoles) == 0 {
		return "false"
	}
	var parts []string
	if len(d.Operations) > 0 {
		var ops []string
		for _, o := range d.Operations {
			ops = append(ops, strconv.Quote(string(o)))
		}
		parts = append(parts, "request.operation in ["+strings.Join(ops, ", ")+"]")
	}
	if len(d.Kinds) > 0 {
		var ks []string
		for _, k := range d.Kinds {
			ks = append(ks, kindCEL(k))
		}
		parts = append(parts, paren(strings.Join(ks, " || ")))
	}
	names := d.Names
	if d.Name != "" {
		parts = append(parts, glob(d.Name, celName))
	}
	if len(names) > 0 {
		parts = append(parts, anyGlob(names, celName))
	}
	if len(d.Namespaces) > 0 {
		parts = append(parts, anyGlob(d.Namespaces, celNamespace))
	}
	if len(d.Annotations) > 0 {
		parts = append(parts, annotationsCEL(d.Annotations))
	}
	if d.Selector != nil {
		parts = append(parts, selectorCEL(d.Selector, celMap("labels")))
	}
	if d.NamespaceSelector != nil {
		parts = append(parts, namespaceSelectorCEL(d.NamespaceSelector))
	}
	if len(f.Subjects) > 0 {
		parts = append(parts, subjectsCEL(f))
	}
	if (len(f.Roles) > 0 || len(f.ClusterRoles) > 0) && roles != nil {
		parts = append(parts, strconv.FormatBool(rolesMatch(f.UserInfo, roles)))
	}
	if len(parts) == 0 {
		return "true"
	}
	return strings.Join(parts, " && ")
}

// kindCEL matches a kind selector against request.kind and the
// subresource; Pod also matches pods/ephemeralcontainers.
func kindCEL(k string) string {
	g, v, kind, sub := parseKindSelector(k)
	parts := []string{glob(g, "request.kind.group"), glob(v, "request.kind.version"), glob(kind, "request.kind.kind")}
	subPart := glob(sub, celSubres)
	if sub != "*" && wildcardMatch(g, "") && wildcardMatch(v, "v1") && wildcardMatch(kind, "Pod") {
		subPart = "(" + subPart + ` || request.kind.group == "" && request.kind.version == "v1" && request.kind.kind == "Pod" && ` + celSubres + ` == "ephemeralcontainers")`
	}
	parts = append(parts, subPart)
	var out []string
	for _, p := range parts {
		if p != "true" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return "true"
	}
	return paren(strings.Join(out, " && "))
}

// namespaceSelectorCEL is what the policy's namespaceSelector cannot say:
// Kyverno never matches a Namespace by namespaceSelector, and judges a
// cluster-scoped object by empty namespace labels.
func namespaceSelectorCEL(s *metav1.LabelSelector) string {
	out := `request.kind.kind != "Namespace"`
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err == nil && !sel.Matches(labels.Set{}) {
		out += ` && ` + celRequestNamespace + ` != ""`
	}
	return out
}

func annotationsCEL(want map[string]string) string {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, celMap("annotations")+".exists(k, "+glob(k, "k")+" && "+glob(want[k], celMap("annotations")+"[k]")+")")
	}
	return strings.Join(parts, " && ")
}

// selectorCEL is a label selector over the labels map m.
func selectorCEL(s *metav1.LabelSelector, m string) string {
	var parts []string
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("(%s in %s && %s[%s] == %s)", strconv.Quote(k), m, m, strconv.Quote(k), strconv.Quote(s.MatchLabels[k])))
	}
	for _, e := range s.MatchExpressions {
		k := strconv.Quote(e.Key)
		vals := make([]string, len(e.Values))
		for i, v := range e.Values {
			vals[i] = strconv.Quote(v)
		}
		list := "[" + strings.Join(vals, ", ") + "]"
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			parts = append(parts, fmt.Sprintf("(%s in %s && %s[%s] in %s)", k, m, m, k, list))
		case metav1.LabelSelectorOpNotIn:
			parts = append(parts, fmt.Sprintf("(!(%s in %s) || !(%s[%s] in %s))", k, m, m, k, list))
		case metav1.LabelSelectorOpExists:
			parts = append(parts, fmt.Sprintf("(%s in %s)", k, m))
		case metav1.LabelSelectorOpDoesNotExist:
			parts = append(parts, fmt.Sprintf("!(%s in %s)", k, m))
		default:
			parts = append(parts, "false")
		}
	}
	if len(parts) == 0 {
		return "true"
	}
	return strings.Join(parts, " && ")
}

// subjectsCEL is Kyverno's CheckSubjects on request.userInfo.
func subjectsCEL(f kyvernov1.ResourceFilter) string {
	var parts []string
	for _, s := range f.Subjects {
		switch s.Kind {
		case "ServiceAccount":
			parts = append(parts, glob("system:serviceaccount:"+s.Namespace+":"+s.Name, celUsername))
		case "Group":
			parts = append(parts, celGroups+".exists(g, "+glob(s.Name, "g")+")")
		case "User":
			parts = append(parts, glob(s.Name, celUsername))
		}
	}
	if len(parts) == 0 {
		return "false"
	}
	return paren(strings.Join(parts, " || "))
}

// glob is CEL that says whether the string s matches Kyverno wildcard
// pattern p ("*" any run, "?" one character; "" matches only "").
func glob(p, s string) string {
	switch {
	case p == "*":
		return "true"
	case !hasWildcard(p):
		return s + " == " + strconv.Quote(p)
	}
	return s + ".matches(" + strconv.Quote(globRegexp(p)) + ")"
}

func anyGlob(patterns []string, s string) string {
	var parts []string
	for _, p := range patterns {
		g := glob(p, s)
		if g == "true" {
			return "true"
		}
		parts = append(parts, g)
	}
	return paren(strings.Join(parts, " || "))
}

// wildcardMatch is Kyverno's wildcard.Match, for patterns known when
// compiling.
func wildcardMatch(p, s string) bool {
	if p == "" {
		return s == ""
	}
	ok, err := regexp.MatchString(globRegexp(p), s)
	return err == nil && ok
}

func globRegexp(p string) string {
	re := regexp.QuoteMeta(p)
	re = strings.ReplaceAll(re, `\*`, ".*")
	re = strings.ReplaceAll(re, `\?`, ".")
	return "^(?s)" + re + "$"
}

func hasWildcard(s string) bool { return strings.ContainsAny(s, "*?") }

func paren(s string) string {
	if s == "true" || s == "false" {
		return s
	}
	return "(" + s + ")"
}
