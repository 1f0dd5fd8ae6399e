package kyverno

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	gojmespath "github.com/kyverno/go-jmespath"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/kyverno/kyverno/pkg/engine/variables/regex"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
)

// kyvernoRefusal is the first check of Kyverno's own policy validation
// (pkg/validation/policy.Validate: Kyverno's admission webhook runs it when
// a ClusterPolicy or Policy is created or updated, and kyverno apply and
// kyverno test skip a policy that fails it) that spec fails, among those
// a policy admitc translates can fail. Kyverno never runs such a policy, so
// admitc refuses it too. path is the field, msg Kyverno's error; both are
// empty when spec passes.
//
// Not mirrored yet: the user variables (serviceAccountName,
// request.userInfo, request.roles, ...) Kyverno refuses in background mode.
func kyvernoRefusal(spec *kyvernov1.Spec) (path, msg string) {
	if spec.BackgroundProcessingEnabled() {
		for i := range spec.Rules {
			if at, kyvernoAt := userInfoInMatch(&spec.Rules[i]); at != "" {
				return fmt.Sprintf("spec.rules[%d].%s", i, at), fmt.Sprintf("Kyverno refuses this policy: only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule: invalid variable used at path: spec/rules[%d]/%s", i, kyvernoAt)
			}
		}
	}
	for i := range spec.Rules {
		rule := &spec.Rules[i]
		rp := fmt.Sprintf("spec.rules[%d]", i)
		if at, variable, err := elementOutsideForEach(rule); err != nil {
			return rp, "Kyverno refuses this policy: " + err.Error()
		} else if at != "" {
			return rp + fieldPath(at), fmt.Sprintf("Kyverno refuses this policy: variable '%s' present outside of foreach at path %s", variable, at)
		}
		if at, err := ruleContextError(rule); err != "" {
			return rp + at, fmt.Sprintf("Kyverno refuses this policy: path: %s: %s", rp, err)
		}
	}
	return "", ""
}

// userInfoInMatch is the first roles, clusterRoles or subjects of the rule's
// match or exclude, in Kyverno's order (hasUserMatchExclude), as admitc's
// field path and as Kyverno's path.
func userInfoInMatch(rule *kyvernov1.Rule) (at, kyvernoAt string) {
	find := func(ui kyvernov1.UserInfo, path string) bool {
		switch {
		case len(ui.Roles) > 0:
			at = path + ".roles"
		case len(ui.ClusterRoles) > 0:
			at = path + ".clusterRoles"
		case len(ui.Subjects) > 0:
			at = path + ".subjects"
		}
		return at != ""
	}
	each := func(fs kyvernov1.ResourceFilters, path string) bool {
		for i, f := range fs {
			if find(f.UserInfo, fmt.Sprintf("%s[%d]", path, i)) {
				return true
			}
		}
		return false
	}
	m, e := &rule.MatchResources, rule.ExcludeResources
	if find(m.UserInfo, "match") || each(m.Any, "match.any") || each(m.All, "match.all") ||
		e != nil && (find(e.UserInfo, "exclude") || each(e.All, "exclude.all") || each(e.Any, "exclude.any")) {
		return at, kyvernoPath(at)
	}
	return "", ""
}

// kyvernoPath writes "match.any[0].subjects" as Kyverno's hasUserMatchExclude
// does: "match/any[0]/subjects".
func kyvernoPath(at string) string { return strings.ReplaceAll(at, ".", "/") }

// elementOutsideForEach mirrors Kyverno's validateElementInForEach: in the
// rule's JSON, a {{ element... }} or {{ elementIndex }} variable in a value
// or a key whose path has no /foreach/ segment. at is that JSON path
// ("/validate/message"); keys are visited in sorted order, so the answer
// is the same on every run.
func elementOutsideForEach(rule *kyvernov1.Rule) (at, variable string, err error) {
	data, err := json.Marshal(rule)
	if err != nil {
		return "", "", err
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", "", err
	}
	at, variable = findElementVariable(doc, "")
	return at, variable, nil
}

func findElementVariable(node any, path string) (string, string) {
	switch n := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if v := elementVariable(k, path); v != "" {
				return path, v
			}
			if at, v := findElementVariable(n[k], path+"/"+strings.ReplaceAll(k, "/", `\/`)); v != "" {
				return at, v
			}
		}
	case []any:
		for i, e := range n {
			if at, v := findElementVariable(e, fmt.Sprintf("%s/%d", path, i)); v != "" {
				return at, v
			}
		}
	case string:
		if v := elementVariable(n, path); v != "" {
			return path, v
		}
	}
	return "", ""
}

// elementVariable is the first element variable in s, if path is outside
// every foreach.
func elementVariable(s, path string) string {
	if strings.Contains(path, "/foreach/") {
		return ""
	}
	for _, v := range regex.RegexVariables.FindAllString(s, -1) {
		if len(regex.RegexVariableInit.FindAllString(v, -1)) == 0 {
			v = v[1:]
		}
		name := strings.TrimSpace(strings.NewReplacer("{{", "", "}}", "").Replace(v))
		name = strings.TrimSpace(strings.TrimPrefix(name, "-"))
		if strings.HasPrefix(name, "element") || name == "elementIndex" {
			return name
		}
	}
	return ""
}

// fieldPath turns Kyverno's JSON path of a rule ("/validate/message",
// "/preconditions/any/0/key") into admitc's field path (".validate.message",
// ".preconditions.any[0].key").
func fieldPath(jsonPath string) string {
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(jsonPath, "/"), "/") {
		if seg == "" {
			continue
		}
		if seg[0] >= '0' && seg[0] <= '9' {
			b.WriteString("[" + seg + "]")
			continue
		}
		b.WriteString("." + seg)
	}
	return b.String()
}

// ruleContextError is Kyverno's validateRuleContext: the field (under the
// rule) and error of the first context entry Kyverno refuses.
func ruleContextError(rule *kyvernov1.Rule) (at, err string) {
	if len(rule.Context) == 0 {
		return "", ""
	}
	if rule.HasValidateCEL() {
		return ".context", "context variables are not supported for CEL expressions in validate rules"
	}
	for i, e := range rule.Context {
		at := fmt.Sprintf(".context[%d]", i)
		if e.Name == "" {
			return at + ".name", "a name is required for context entries"
		}
		for _, v := range conditions.PredefinedVariables {
			if e.Name == v || strings.HasPrefix(e.Name, v+".") {
				return at + ".name", fmt.Sprintf("entry name %s is invalid as it conflicts with a pre-defined variable %s", e.Name, v)
			}
		}
		n := 0
		for _, set := range []bool{e.ConfigMap != nil, e.APICall != nil, e.GlobalReference != nil, e.ImageRegistry != nil, e.Variable != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return at, "exactly one of configMap or apiCall or imageRegistry or variable is required for context entries"
		}
		if v := e.Variable; v != nil {
			if v.JMESPath != "" && !regex.RegexVariables.MatchString(v.JMESPath) {
				if _, err := gojmespath.NewParser().Parse(v.JMESPath); err != nil {
					return at + ".variable.jmesPath", fmt.Sprintf("failed to parse JMESPath %s: %v", v.JMESPath, err)
				}
			}
			if v.GetValue() == nil && v.JMESPath == "" {
				return at + ".variable", "a variable must define a value or a jmesPath expression"
			}
			if v.GetDefault() != nil && v.JMESPath == "" {
				return at + ".variable.default", "a variable must define a default value only when a jmesPath expression is defined"
			}
		}
	}
	return "", ""
}
