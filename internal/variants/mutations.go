package variants

import (
	"fmt"
	"strconv"
)

// Kinds of change, one per round of the pick (see Generate).
const (
	kindRemove    = "remove"
	kindNull      = "null"
	kindRetype    = "retype"
	kindList      = "list"
	kindContainer = "container"
	kindPodSpec   = "podspec"
	kindBoundary  = "boundary"
)

// mutation is one change: its kind, a name saying what it does, and the
// change itself, applied to a copy of the object (it returns the new root).
type mutation struct {
	kind  string
	name  string
	apply func(obj any) any
}

func setTo(kind string, p path, value any) mutation {
	return mutation{kind: kind, name: fmt.Sprintf("%s=%s", p, render(value)), apply: func(obj any) any {
		return set(obj, p, deepCopy(value))
	}}
}

func removeAt(kind string, p path) mutation {
	return mutation{kind: kind, name: "remove " + p.String(), apply: func(obj any) any { return remove(obj, p) }}
}

// identity are the paths a variant keeps: apiVersion, kind, and the name
// and namespace the caller knows the object by.
var identity = []path{{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "namespace"}}

// touchesIdentity reports whether changing the value at p changes an
// identity path (p is one of them or holds one).
func touchesIdentity(p path) bool {
	for _, id := range identity {
		if len(p) <= len(id) && samePrefix(id, p) {
			return true
		}
	}
	return false
}

func samePrefix(long, short path) bool {
	for i := range short {
		if long[i] != short[i] {
			return false
		}
	}
	return true
}

// genericMutations are, for every path of obj but the identity: the field
// removed, set to null and set to each other JSON type; and every list
// emptied and extended by a copy of its first element, as is and changed.
func genericMutations(obj map[string]any) []mutation {
	var out []mutation
	for _, p := range paths(obj, nil) {
		if touchesIdentity(p) {
			continue
		}
		v, _ := get(obj, p)
		out = append(out, removeAt(kindRemove, p))
		if v != nil {
			out = append(out, setTo(kindNull, p, nil))
		}
		for _, other := range otherTypes(v) {
			out = append(out, setTo(kindRetype, p, other))
		}
		if l, ok := v.([]any); ok {
			out = append(out, listMutations(p, l)...)
		}
	}
	return out
}

// otherTypes are values of each JSON type but v's, derived from v where
// it can be (a number as a string, a string in a list).
func otherTypes(v any) []any {
	switch t := v.(type) {
	case string:
		return []any{int64(len(t)), true, []any{t}, map[string]any{"value": t}}
	case int64:
		return []any{strconv.FormatInt(t, 10), t != 0, []any{t}, float64(t) + 0.5}
	case float64:
		return []any{strconv.FormatFloat(t, 'f', -1, 64), t != 0, []any{t}}
	case bool:
		return []any{strconv.FormatBool(t), int64(1), []any{t}}
	case []any:
		return []any{"x", map[string]any{}, int64(0)}
	case map[string]any:
		return []any{"x", []any{}, int64(0), false}
	}
	return []any{"", int64(0), false, []any{}, map[string]any{}}
}

// listMutations empty the list at p, and extend it with a copy of its
// first element and with a copy whose every scalar is changed.
func listMutations(p path, l []any) []mutation {
	out := []mutation{{kind: kindList, name: "empty " + p.String(), apply: func(obj any) any {
		return set(obj, p, []any{})
	}}}
	if len(l) == 0 {
		return out
	}
	extend := func(name string, extra any) mutation {
		return mutation{kind: kindList, name: name, apply: func(obj any) any {
			cur, _ := get(obj, p)
			list, _ := cur.([]any)
			return set(obj, p, append(append([]any{}, list...), deepCopy(extra)))
		}}
	}
	return append(out,
		extend(fmt.Sprintf("append a copy of %s", p.child(0)), l[0]),
		extend(fmt.Sprintf("append a changed copy of %s", p.child(0)), changeScalars(deepCopy(l[0]))))
}

// changeScalars changes every scalar under v: strings get a suffix,
// numbers grow by one, booleans flip.
func changeScalars(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = changeScalars(e)
		}
	case []any:
		for i, e := range t {
			t[i] = changeScalars(e)
		}
	case string:
		return t + "-x"
	case int64:
		return t + 1
	case float64:
		return t + 1
	case bool:
		return !t
	}
	return v
}
