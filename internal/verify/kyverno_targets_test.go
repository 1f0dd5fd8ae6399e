//go:build kyverno

package verify

import (
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
)

// anchoredKey is a pattern key with its anchor: (k), =(k), ^(k), X(k),
// <(k), +(k).
var anchoredKey = regexp.MustCompile(`^[=^X<+]?\((.+)\)$`)

// celLiteral finds the string and number literals of a CEL expression.
var celLiteral = regexp.MustCompile(`'([^']*)'|"([^"]*)"|\b(\d+(?:\.\d+)?)\b`)

// policyTargets are what the variants aim at: the literals of the
// policy's rules (pattern scalars, condition values, CEL literals) and
// the paths its patterns look at, for a Pod.
func policyTargets(p *kyvernov1.ClusterPolicy) (scalars []any, paths []string) {
	for _, r := range p.Spec.Rules {
		data, _ := json.Marshal(r)
		var rule map[string]any
		_ = json.Unmarshal(data, &rule)
		delete(rule, "match")
		delete(rule, "exclude")
		delete(rule, "name")
		collectTargets(rule, "", &scalars, &paths)
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

func collectTargets(v any, key string, scalars *[]any, paths *[]string) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedAnyKeys(t) {
			switch k {
			case "message":
			case "pattern":
				patternTargets(t[k], "", scalars, paths)
			case "anyPattern":
				for _, p := range t[k].([]any) {
					patternTargets(p, "", scalars, paths)
				}
			default:
				collectTargets(t[k], k, scalars, paths)
			}
		}
	case []any:
		for _, e := range t {
			collectTargets(e, key, scalars, paths)
		}
	case string:
		if key != "expression" {
			*scalars = append(*scalars, t)
			return
		}
		for _, m := range celLiteral.FindAllStringSubmatch(t, -1) {
			switch {
			case m[3] != "":
				n, _ := strconv.ParseFloat(m[3], 64)
				*scalars = append(*scalars, n)
			default:
				*scalars = append(*scalars, m[1]+m[2])
			}
		}
	case nil:
	default:
		*scalars = append(*scalars, t)
	}
}

// patternTargets collects a pattern's scalars and the path of each of
// its leaves, anchors removed, lists as [*]; a key with a wildcard ends
// the path.
func patternTargets(p any, prefix string, scalars *[]any, paths *[]string) {
	switch t := p.(type) {
	case map[string]any:
		for _, raw := range sortedAnyKeys(t) {
			k := raw
			if m := anchoredKey.FindStringSubmatch(raw); m != nil {
				k = m[1]
			}
			if regexp.MustCompile(`[*?]`).MatchString(k) {
				collectTargets(t[raw], "", scalars, new([]string))
				continue
			}
			patternTargets(t[raw], joinKey(prefix, k), scalars, paths)
		}
	case []any:
		for _, e := range t {
			patternTargets(e, prefix+"[*]", scalars, paths)
		}
	default:
		if prefix != "" {
			*paths = append(*paths, prefix)
		}
		collectTargets(t, "", scalars, paths)
	}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func joinKey(prefix, k string) string {
	if !identifier.MatchString(k) {
		return prefix + "[" + strconv.Quote(k) + "]"
	}
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

func sortedAnyKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
