package pattern

import (
	"fmt"
	"math/rand"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// segment is one step of a path into a resource: a map key or a list index.
type segment any

// variantGen derives resource variants mechanically: fields removed, set to
// null or to other types, lists emptied or extended, values at the
// boundaries of the pattern's operators and ranges, written both where the
// resource has fields and where the pattern looks.
type variantGen struct {
	rng      *rand.Rand
	boundary []any
	patterns [][]segment
}

func newVariantGen(seed int64, patterns ...any) *variantGen {
	g := &variantGen{rng: rand.New(rand.NewSource(seed))}
	for _, p := range patterns {
		collectPatternPaths(p, nil, &g.patterns)
		g.boundary = append(g.boundary, boundaryValues(p)...)
	}
	g.boundary = append(g.boundary, otherTypes()...)
	return g
}

// otherTypes are values of every JSON type, as the API server decodes them.
func otherTypes() []any {
	return []any{nil, "", "x", int64(0), int64(1), int64(-1), 1.5, true, false,
		map[string]any{}, []any{}, []any{"x"}, "0", "1m", "1h", "1Gi", "true", "false", "null"}
}

// variants returns n variants of resource, each with one to three changes.
func (g *variantGen) variants(resource any, n int) []any {
	out := make([]any, 0, n)
	for len(out) < n {
		v := deepCopy(resource)
		for k := 1 + g.rng.Intn(3); k > 0; k-- {
			v = g.mutate(v)
		}
		out = append(out, v)
	}
	return out
}

func (g *variantGen) mutate(v any) any {
	paths := resourcePaths(v, nil)
	pick := func() []segment { return paths[g.rng.Intn(len(paths))] }
	value := func() any { return deepCopy(g.boundary[g.rng.Intn(len(g.boundary))]) }
	switch g.rng.Intn(7) {
	case 0:
		return remove(v, pick())
	case 1:
		return set(v, pick(), nil)
	case 2:
		return set(v, pick(), deepCopy(otherTypes()[g.rng.Intn(len(otherTypes()))]))
	case 3, 4:
		if len(g.patterns) > 0 {
			return set(v, g.patterns[g.rng.Intn(len(g.patterns))], value())
		}
		return set(v, pick(), value())
	case 5:
		return set(v, pick(), value())
	default:
		var lists [][]segment
		for _, p := range paths {
			if _, ok := get(v, p).([]any); ok {
				lists = append(lists, p)
			}
		}
		if len(lists) == 0 {
			return remove(v, pick())
		}
		p := lists[g.rng.Intn(len(lists))]
		l := get(v, p).([]any)
		if len(l) == 0 || g.rng.Intn(3) == 0 {
			return set(v, p, []any{})
		}
		extra := deepCopy(l[g.rng.Intn(len(l))])
		extra = g.mutate(map[string]any{"e": extra}).(map[string]any)["e"]
		return set(v, p, append(append([]any{}, l...), extra))
	}
}

// resourcePaths lists every node's path, in a fixed order.
func resourcePaths(v any, prefix []segment) [][]segment {
	out := [][]segment{append([]segment{}, prefix...)}
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, resourcePaths(t[k], append(append([]segment{}, prefix...), k))...)
		}
	case []any:
		for i, e := range t {
			out = append(out, resourcePaths(e, append(append([]segment{}, prefix...), i))...)
		}
	}
	if len(prefix) == 0 {
		return out[1:]
	}
	return out
}

// collectPatternPaths lists the resource paths a pattern looks at (anchors
// removed, list patterns at index 0 and 1, wildcard keys made concrete).
func collectPatternPaths(p any, prefix []segment, out *[][]segment) {
	switch t := p.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, raw := range keys {
			k := strings.NewReplacer("*", "x", "?", "y").Replace(parseKey(raw).key)
			path := append(append([]segment{}, prefix...), k)
			*out = append(*out, path)
			collectPatternPaths(t[raw], path, out)
		}
	case []any:
		for _, e := range t {
			for i := 0; i < 2; i++ {
				path := append(append([]segment{}, prefix...), i)
				*out = append(*out, path)
				collectPatternPaths(e, path, out)
			}
		}
	}
}

var numberPrefix = regexp.MustCompile(`^([+-]?\d+(?:\.\d+)?)(.*)$`)

// boundaryValues are values at and around every operand of the pattern's
// scalars: the operand, one below and one above, as numbers and strings
// with the operand's unit, and strings around its wildcards.
func boundaryValues(p any) []any {
	var out []any
	switch t := p.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, boundaryValues(t[k])...)
		}
	case []any:
		for _, e := range t {
			out = append(out, boundaryValues(e)...)
		}
	case string:
		for _, operand := range operands(t) {
			out = append(out, operandValues(operand)...)
		}
	case float64:
		out = append(out, t, int64(t), int64(t)-1, int64(t)+1, strconv.FormatFloat(t, 'f', -1, 64), t+0.5)
	case bool:
		out = append(out, t, !t, strconv.FormatBool(t))
	}
	return out
}

// operands splits a scalar pattern into the values its conditions compare with.
func operands(p string) []string {
	var out []string
	for _, alt := range strings.Split(p, "|") {
		for _, c := range strings.Split(alt, "&") {
			c = strings.TrimSpace(c)
			switch op := operatorOf(c); op {
			case opInRange, opNotInRange:
				re := inRangeRegex
				if op == opNotInRange {
					re = notInRangeRegex
				}
				m := re.FindStringSubmatch(c)
				out = append(out, m[1], m[2])
			default:
				out = append(out, strings.TrimSpace(c[len(op):]))
			}
		}
	}
	return out
}

func operandValues(o string) []any {
	out := []any{o, o + "x"}
	if strings.ContainsAny(o, "*?") {
		r := strings.NewReplacer("*", "", "?", "y")
		out = append(out, r.Replace(o), strings.NewReplacer("*", "abc", "?", "z").Replace(o), "a"+r.Replace(o))
	}
	if m := numberPrefix.FindStringSubmatch(o); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		for _, d := range []float64{-1, 0, 1} {
			out = append(out, fmt.Sprintf("%g%s", n+d, m[2]))
			if m[2] == "" {
				out = append(out, int64(n+d))
			}
		}
		if m[2] == "" {
			out = append(out, n+0.5)
		}
	}
	return out
}

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

func get(v any, path []segment) any {
	for _, s := range path {
		switch t := v.(type) {
		case map[string]any:
			k, ok := s.(string)
			if !ok {
				return nil
			}
			v = t[k]
		case []any:
			i, ok := s.(int)
			if !ok || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// set writes value at path, creating maps and lists on the way (replacing
// what stands in the way).
func set(v any, path []segment, value any) any {
	if len(path) == 0 {
		return value
	}
	switch s := path[0].(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		m[s] = set(m[s], path[1:], value)
		return m
	case int:
		l, ok := v.([]any)
		if !ok {
			l = []any{}
		}
		for len(l) <= s {
			l = append(l, map[string]any{})
		}
		l[s] = set(l[s], path[1:], value)
		return l
	}
	return v
}

func remove(v any, path []segment) any {
	if len(path) == 0 {
		return nil
	}
	parent := get(v, path[:len(path)-1])
	switch t := parent.(type) {
	case map[string]any:
		if k, ok := path[len(path)-1].(string); ok {
			delete(t, k)
		}
	case []any:
		if i, ok := path[len(path)-1].(int); ok && i < len(t) {
			return set(v, path[:len(path)-1], append(append([]any{}, t[:i]...), t[i+1:]...))
		}
	}
	return v
}
