//go:build kyverno

package verify

import (
	"encoding/json"
	"sort"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/internal/variants"
)

// policyTargets are what the variants aim at: the literals of the
// policy's rules (pattern scalars, condition values, CEL literals) and
// the paths its patterns look at, for a Pod.
func policyTargets(p *kyvernov1.ClusterPolicy) (scalars []any, paths []string) {
	for _, r := range p.Spec.Rules {
		data, _ := json.Marshal(r)
		var rule map[string]any
		_ = json.Unmarshal(data, &rule)
		s, ps := variants.RuleTargets(rule)
		scalars, paths = append(scalars, s...), append(paths, ps...)
	}
	sort.Strings(paths)
	return withoutVariables(scalars), paths
}

// withoutVariables drops literals holding a {{ }} reference: an object
// carrying one makes Kyverno's engine substitute the value it reads into
// itself without end (its substitution re-reads substituted text), which
// exhausts memory rather than decides, and no admission request does that.
func withoutVariables(scalars []any) []any {
	out := scalars[:0]
	for _, s := range scalars {
		if str, ok := s.(string); ok && strings.Contains(str, "{{") {
			continue
		}
		out = append(out, s)
	}
	return out
}
