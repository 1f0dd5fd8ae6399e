package variants

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// What a Kyverno rule compares, for aiming variants at it. A rule is read
// as JSON (map[string]any), so the package keeps importing the standard
// library only.

// anchoredKey is a pattern key with its anchor: (k), =(k), ^(k), X(k),
// <(k), +(k).
var anchoredKey = regexp.MustCompile(`^[=^X<+]?\((.+)\)$`)

// celLiteral finds the string and number literals of a CEL expression.
var celLiteral = regexp.MustCompile(`'([^']*)'|"([^"]*)"|\b(\d+(?:\.\d+)?)\b`)

// wildcardKey is a pattern key holding a wildcard.
var wildcardKey = regexp.MustCompile(`[*?]`)

// RuleTargets are the literals of a rule (pattern scalars, condition
// values, CEL literals; its match, exclude and name left out) and the
// paths its patterns look at, written for a Pod.
func RuleTargets(rule map[string]any) (scalars []any, paths []string) {
	for _, k := range sortedKeys(rule) {
		switch k {
		case "match", "exclude", "name":
		default:
			collectTargets(rule[k], k, &scalars, &paths)
		}
	}
	return scalars, paths
}

// PatternTargets are a pattern's (or a strategic merge overlay's) scalars
// and the path of each of its leaves, anchors removed, lists as [*]; a key
// with a wildcard ends the path.
func PatternTargets(p any) (scalars []any, paths []string) {
	patternTargets(p, "", &scalars, &paths)
	return scalars, paths
}

func collectTargets(v any, key string, scalars *[]any, paths *[]string) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
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

func patternTargets(p any, prefix string, scalars *[]any, paths *[]string) {
	switch t := p.(type) {
	case map[string]any:
		for _, raw := range sortedKeys(t) {
			k := raw
			if m := anchoredKey.FindStringSubmatch(raw); m != nil {
				k = m[1]
			}
			if wildcardKey.MatchString(k) {
				collectTargets(t[raw], "", scalars, new([]string))
				continue
			}
			patternTargets(t[raw], JoinKey(prefix, k), scalars, paths)
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

// JoinKey appends the map key k to a field path, as [".."] when it is not
// an identifier.
func JoinKey(prefix, k string) string {
	if !isIdentifier(k) {
		return prefix + "[" + strconv.Quote(k) + "]"
	}
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// objectQuery is a field chain on the object in a JMESPath query
// (request.object, a foreach's element) or a CEL expression (object): the
// root, then fields, indexes and [] or [*] projections.
var objectQuery = regexp.MustCompile(`\b(request\.object|object|element)((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d*\*?\])+)`)

// querySegment is one step of such a chain.
var querySegment = regexp.MustCompile(`\.[A-Za-z_][A-Za-z0-9_]*|\[\d*\*?\]`)

// QueriedPaths are the paths of the object that the queries of a policy
// or rule (read as JSON) read: {{ }} variables and JMESPath
// (request.object.spec.hostNetwork), in a foreach entry its element's
// fields under the entry's list (spec.containers[*].securityContext.
// capabilities.drop), and CEL (object.spec.replicas). Only field chains
// are followed: a function or a filter ends one (a CEL macro's name is
// read as a field, and a path no object holds is harmless).
func QueriedPaths(policy any) []string {
	seen := map[string]bool{}
	queriedPaths(policy, "", seen)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// queriedPaths collects into seen; element is the path of the enclosing
// foreach entry's elements ("" outside one).
func queriedPaths(v any, element string, seen map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if list, ok := t["list"].(string); ok {
			if p, ok := queryPath(strings.TrimSpace(list), element); ok {
				element = p + "[*]"
			}
		}
		for _, k := range sortedKeys(t) {
			queriedPaths(t[k], element, seen)
		}
	case []any:
		for _, e := range t {
			queriedPaths(e, element, seen)
		}
	case string:
		for _, m := range objectQuery.FindAllString(t, -1) {
			if p, ok := queryPath(m, element); ok && p != "" {
				seen[p] = true
			}
		}
	}
}

// queryPath turns one field chain into a field path, or false when it is
// not one (element outside a foreach).
func queryPath(q, element string) (string, bool) {
	m := objectQuery.FindStringSubmatch(q)
	if m == nil || m[0] != q || m[1] == "element" && element == "" {
		return "", false
	}
	out := ""
	if m[1] == "element" {
		out = element
	}
	for _, seg := range querySegment.FindAllString(m[2], -1) {
		switch {
		case strings.HasPrefix(seg, "."):
			out = JoinKey(out, seg[1:])
		case seg == "[]" || seg == "[*]":
			out += "[*]"
		default:
			out += seg
		}
	}
	return out, true
}
