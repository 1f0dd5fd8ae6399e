package verify

import (
	"fmt"
	"strings"

	"github.com/kyverno/kyverno/ext/wildcard"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Selector is kyverno test's --test-case-selector
// (cmd/cli/kubectl-kyverno/test/filter): policy=GLOB,rule=GLOB,resource=GLOB,
// with Kyverno's wildcards (* and ?). An expected result is run when every
// key given matches it: its policy, its rule, one of its resources; a
// result without a rule or resources matches those keys. The zero
// Selector selects every result.
type Selector struct {
	policies, rules, resources []string
}

// ParseSelector parses a selector as kyverno test does; unlike kyverno
// test, which prints the mistake and runs every result, a malformed one is
// an error.
func ParseSelector(in string) (Selector, error) {
	var s Selector
	if strings.TrimSpace(in) == "" {
		return s, nil
	}
	for _, part := range strings.Split(in, ",") {
		kv := strings.Split(part, "=")
		if len(kv) != 2 {
			return Selector{}, fmt.Errorf("--test-case-selector: %q is not KEY=VALUE (keys: policy, rule, resource), e.g. policy=disallow-*,rule=host-path,resource=bad-pod", part)
		}
		value := strings.TrimSpace(kv[1])
		switch key := strings.TrimSpace(kv[0]); key {
		case "policy":
			s.policies = append(s.policies, value)
		case "rule":
			s.rules = append(s.rules, value)
		case "resource":
			s.resources = append(s.resources, value)
		default:
			return Selector{}, fmt.Errorf("--test-case-selector: unknown key %q in %q (keys: policy, rule, resource)", key, part)
		}
	}
	return s, nil
}

// selects says whether the result is run (filter.composite.Apply).
func (s Selector) selects(r testResult) bool {
	for _, p := range s.policies {
		if r.Policy != "" && !wildcard.Match(p, r.Policy) {
			return false
		}
	}
	for _, p := range s.rules {
		if r.Rule != "" && !wildcard.Match(p, r.Rule) {
			return false
		}
	}
	for _, p := range s.resources {
		if len(r.Resources) > 0 && !anyMatches(p, r.Resources) {
			return false
		}
	}
	return true
}

func anyMatches(pattern string, names []string) bool {
	for _, n := range names {
		if wildcard.Match(pattern, n) {
			return true
		}
	}
	return false
}

// resourceNames are the names a selected result is judged on: kyverno
// test replaces the result's resources with the selector's resource
// values that are not "*" (ExtractResourceFilters); a value with a
// wildcard is left to narrow, as a name with a wildcard names nothing in
// kyverno test (which then judges every resource).
func (s Selector) resourceNames(names []string) []string {
	var literal []string
	for _, p := range s.resources {
		if p == "*" {
			break
		}
		if !strings.ContainsAny(p, "*?") {
			literal = append(literal, p)
		}
	}
	if len(literal) > 0 {
		return literal
	}
	return names
}

// narrow keeps the objects whose name or namespace/name matches the
// selector's resource values with a wildcard, if it has any.
func (s Selector) narrow(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var patterns []string
	for _, p := range s.resources {
		if p != "*" && strings.ContainsAny(p, "*?") {
			patterns = append(patterns, p)
		}
	}
	if len(patterns) == 0 {
		return objs
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		for _, p := range patterns {
			if wildcard.Match(p, o.GetName()) || wildcard.Match(p, o.GetNamespace()+"/"+o.GetName()) {
				out = append(out, o)
				break
			}
		}
	}
	return out
}
