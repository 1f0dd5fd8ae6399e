package migrate

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/render"
	"github.com/admitc/admitc/ir"
)

// SameAsReimport is the kyverno.AutogenCheck of admitc: it renders the
// candidate successor, reads it back through Kyverno's importer (so
// Kyverno's own autogen of a ValidatingPolicy or MutatingPolicy makes its
// twins), and compares each policy read back with the original it stands
// for, by what decides: resources and operations matched, selectors,
// conditions, variables, checks, messages, actions. It returns "" when
// every one decides as its original, else the differences.
func SameAsReimport(candidate runtime.Object, originals []*ir.Policy) string {
	data, err := render.Object(candidate)
	if err != nil {
		return err.Error()
	}
	set, diags := compiler.Compile([]compiler.Source{{Name: "successor.yaml", Data: data}}, compiler.Options{})
	if len(diags) > 0 {
		return "it does not read back: " + diags.Error()
	}
	byRole := map[string]*ir.Policy{}
	for i := range set.Policies {
		byRole[role(&set.Policies[i])] = &set.Policies[i]
	}
	var diffs []string
	for _, o := range originals {
		r := role(o)
		back := byRole[r]
		delete(byRole, r)
		if back == nil {
			diffs = append(diffs, fmt.Sprintf("Kyverno would generate no %s policy", r))
			continue
		}
		if d := Difference(o, back); d != "" {
			diffs = append(diffs, r+": "+d)
		}
	}
	for r := range byRole {
		diffs = append(diffs, fmt.Sprintf("Kyverno would generate a %s policy the source has not", r))
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// role is what an imported policy is to its source rule: the rule itself
// ("rule"), its pod-controller twin ("autogen") or its CronJob twin
// ("autogen-cronjob").
func role(p *ir.Policy) string {
	if p.From == nil || p.From.AutogenOf == "" {
		return "rule"
	}
	generated := p.From.Rule
	if generated == "" && p.From.Namespace != "" {
		generated = strings.TrimPrefix(p.Name, p.From.Namespace+".")
	} else if generated == "" {
		generated = p.Name
	}
	if strings.HasPrefix(generated, "autogen-cronjob-") {
		return "autogen-cronjob"
	}
	return "autogen"
}

// Difference says how b would decide a request differently from a, or ""
// when they decide alike: what they match (resources, operations,
// selectors, conditions), what they check and report, and their actions.
// Names, origins and the order of rules do not decide.
func Difference(a, b *ir.Policy) string {
	if a.Kind != b.Kind {
		return fmt.Sprintf("it is %s, not %s", b.Kind, a.Kind)
	}
	if d := coverageDifference(a.MatchConstraints, b.MatchConstraints); d != "" {
		return d
	}
	checks := []struct {
		what string
		a, b any
	}{
		{"failurePolicy", a.FailurePolicy, b.FailurePolicy},
		{"namespaceSelector", selector(a.MatchConstraints, true), selector(b.MatchConstraints, true)},
		{"objectSelector", selector(a.MatchConstraints, false), selector(b.MatchConstraints, false)},
		{"matchConditions", expressions(a.MatchConditions), expressions(b.MatchConditions)},
		{"variables", named(a.Variables), named(b.Variables)},
		{"validations", validations(a.Validations), validations(b.Validations)},
		{"auditAnnotations", audit(a.AuditAnnotations), audit(b.AuditAnnotations)},
		{"mutations", mutationList(a.Mutations), mutationList(b.Mutations)},
		{"reinvocationPolicy", a.ReinvocationPolicy, b.ReinvocationPolicy},
		{"validationActions", actions(a), actions(b)},
	}
	for _, c := range checks {
		if reflect.DeepEqual(c.a, c.b) {
			continue
		}
		if s := fmt.Sprintf("%v, not %v", c.b, c.a); len(s) <= 80 {
			return fmt.Sprintf("its %s differ: %s", c.what, s)
		}
		return fmt.Sprintf("its %s differ", c.what)
	}
	return ""
}

// coverage is every group/version/resource/operation/scope a list of
// rules matches, operations and scope spelled out.
func coverage(rules []ir.ResourceRule) map[string]bool {
	out := map[string]bool{}
	for _, r := range rules {
		ops := r.Operations
		for _, o := range ops {
			if o == "*" {
				ops = []ir.Operation{ir.Create, ir.Update, ir.Delete, ir.Connect}
			}
		}
		scope := r.Scope
		if scope == "" {
			scope = "*"
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					for _, o := range ops {
						out[fmt.Sprintf("%s/%s %s %s (scope %s)", g, v, res, o, scope)] = true
					}
				}
			}
		}
	}
	return out
}

// coverageDifference names what b matches that a does not, or the other way.
func coverageDifference(a, b *ir.MatchResources) string {
	if a == nil || b == nil {
		if a != b {
			return "one of them has no matchConstraints"
		}
		return ""
	}
	for _, c := range []struct {
		what string
		a, b []ir.ResourceRule
	}{{"", a.ResourceRules, b.ResourceRules}, {"exclude ", a.ExcludeResourceRules, b.ExcludeResourceRules}} {
		ca, cb := coverage(c.a), coverage(c.b)
		if missing := minus(ca, cb); len(missing) > 0 {
			return fmt.Sprintf("it would not %smatch %s", c.what, summary(missing))
		}
		if extra := minus(cb, ca); len(extra) > 0 {
			return fmt.Sprintf("it would also %smatch %s", c.what, summary(extra))
		}
	}
	if mp(a) != mp(b) || fmt.Sprint(names(a.ResourceRules)) != fmt.Sprint(names(b.ResourceRules)) {
		return "its matchPolicy or resourceNames differ"
	}
	return ""
}

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// summary names the resources of a coverage difference, once each.
func summary(keys []string) string {
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		res := strings.Fields(k)[1]
		if !seen[res] {
			seen[res] = true
			out = append(out, res)
		}
	}
	return strings.Join(out, ", ")
}

func mp(m *ir.MatchResources) ir.MatchPolicy {
	if m.MatchPolicy == "" {
		return ir.Equivalent
	}
	return m.MatchPolicy
}

func names(rules []ir.ResourceRule) [][]string {
	var out [][]string
	for _, r := range rules {
		if len(r.ResourceNames) > 0 {
			out = append(out, r.ResourceNames)
		}
	}
	return out
}

// selector is a label selector as sorted requirements (matchLabels as In).
func selector(m *ir.MatchResources, namespace bool) []string {
	s := m.ObjectSelector
	if namespace {
		s = m.NamespaceSelector
	}
	if s == nil {
		return nil
	}
	var out []string
	for k, v := range s.MatchLabels {
		out = append(out, k+" In ["+v+"]")
	}
	for _, e := range s.MatchExpressions {
		out = append(out, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
	}
	sort.Strings(out)
	return out
}

func expressions(cs []ir.NamedExpression) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Expression)
	}
	return out
}

func named(vs []ir.NamedExpression) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name+"="+v.Expression)
	}
	return out
}

func validations(vs []ir.Validation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s | %s | %s | %s", v.Expression, v.Message, v.MessageExpression, v.Reason))
	}
	return out
}

func audit(as []ir.AuditAnnotation) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Key+"="+a.ValueExpression)
	}
	return out
}

func mutationList(ms []ir.Mutation) []string {
	var out []string
	for _, m := range ms {
		out = append(out, string(m.PatchType)+": "+m.Expression)
	}
	return out
}

func actions(p *ir.Policy) []ir.Action {
	if len(p.Bindings) == 0 {
		return p.Actions
	}
	return p.Bindings[0].Actions
}
