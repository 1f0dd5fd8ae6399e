package variants

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// path is a list of steps into an object: map keys (string) and list
// indexes (int).
type path []any

// String renders p as a field path: spec.containers[0].image, with keys
// that are not identifiers quoted (metadata.labels["app.kubernetes.io/name"]).
func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch t := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", t)
		case string:
			switch {
			case !isIdentifier(t):
				fmt.Fprintf(&b, "[%s]", strconv.Quote(t))
			case b.Len() > 0:
				b.WriteString("." + t)
			default:
				b.WriteString(t)
			}
		}
	}
	return b.String()
}

func isIdentifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// child is p extended by one step, in a new slice.
func (p path) child(s any) path {
	return append(append(path{}, p...), s)
}

// sortedKeys are m's keys in order: every walk over a map is deterministic.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// paths lists the path of every value under v, parents before children,
// map keys in sorted order.
func paths(v any, prefix path) []path {
	var out []path
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			p := prefix.child(k)
			out = append(append(out, p), paths(t[k], p)...)
		}
	case []any:
		for i, e := range t {
			p := prefix.child(i)
			out = append(append(out, p), paths(e, p)...)
		}
	}
	return out
}

// get is the value at p, and whether it exists.
func get(v any, p path) (any, bool) {
	for _, s := range p {
		switch t := v.(type) {
		case map[string]any:
			k, _ := s.(string)
			e, ok := t[k]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, ok := s.(int)
			if !ok || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// set writes value at p, creating maps (for keys) and lists (for indexes,
// padded with empty maps) on the way, replacing what stands in the way.
// It returns the new root.
func set(v any, p path, value any) any {
	if len(p) == 0 {
		return value
	}
	switch s := p[0].(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		m[s] = set(m[s], p[1:], value)
		return m
	case int:
		l, ok := v.([]any)
		if !ok {
			l = []any{}
		}
		for len(l) <= s {
			l = append(l, map[string]any{})
		}
		l[s] = set(l[s], p[1:], value)
		return l
	}
	return v
}

// remove deletes the value at p (a list element is cut out of its list)
// and returns the new root.
func remove(v any, p path) any {
	if len(p) == 0 {
		return v
	}
	parent, ok := get(v, p[:len(p)-1])
	if !ok {
		return v
	}
	switch t := parent.(type) {
	case map[string]any:
		if k, ok := p[len(p)-1].(string); ok {
			delete(t, k)
		}
	case []any:
		if i, ok := p[len(p)-1].(int); ok && i < len(t) {
			return set(v, p[:len(p)-1], append(append([]any{}, t[:i]...), t[i+1:]...))
		}
	}
	return v
}

// deepCopy copies a JSON value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// parsePath reads a field path as the caller writes it:
// spec.containers[*].securityContext.runAsUser, with [*] for every
// element and ["key.with.dots"] for other keys. A wildcard is kept as the
// string "*" after a list step marker (see expand).
func parsePath(s string) (path, error) {
	var out path
	for s != "" {
		switch {
		case strings.HasPrefix(s, "["):
			end := strings.Index(s, "]")
			if strings.HasPrefix(s, `["`) {
				end = strings.Index(s, `"]`) + 1
			}
			if end <= 0 {
				return nil, fmt.Errorf("unterminated [ in %q", s)
			}
			step, err := parseIndex(s[1:end])
			if err != nil {
				return nil, err
			}
			out, s = append(out, step), s[end+1:]
		case strings.HasPrefix(s, "."):
			s = s[1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			out, s = append(out, s[:end]), s[end:]
		}
	}
	return out, nil
}

// anyIndex stands for [*] in a parsed path.
type anyIndex struct{}

func parseIndex(s string) (any, error) {
	if s == "*" {
		return anyIndex{}, nil
	}
	if strings.HasPrefix(s, `"`) {
		return strconv.Unquote(s)
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 {
		return nil, fmt.Errorf("bad index [%s]", s)
	}
	return i, nil
}

// expand gives the concrete paths of p in v: [*] is every element of the
// list there, or index 0 when the list is absent or empty.
func expand(v any, p path) []path {
	out := []path{{}}
	for _, s := range p {
		var next []path
		for _, q := range out {
			if _, ok := s.(anyIndex); !ok {
				next = append(next, q.child(s))
				continue
			}
			l, _ := get(v, q)
			n := 1
			if list, ok := l.([]any); ok && len(list) > 0 {
				n = len(list)
			}
			for i := 0; i < n; i++ {
				next = append(next, q.child(i))
			}
		}
		out = next
	}
	return out
}
