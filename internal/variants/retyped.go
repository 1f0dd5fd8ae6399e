package variants

import "fmt"

// TypeValues are values of each JSON kind a policy may meet where it
// compares another: a map, a list, a string, a number and null.
var TypeValues = []any{map[string]any{"a": "b"}, []any{"x"}, "x", int64(1), nil}

// Retyped returns, for each of TypeValues in order, the variants of obj
// that write it at one of paths (written for a Pod, mapped onto obj's pod
// templates, [*] being every element of the list there) where obj holds
// the map or list the value goes in, one variant per such path in the
// order of paths. The identity paths are left alone, and a variant equal
// to obj is left out. A path that does not parse is an error.
func Retyped(obj map[string]any, paths []string) ([][]Variant, error) {
	var concrete []path
	seen := map[string]bool{}
	for _, s := range paths {
		p, err := parsePath(s)
		if err != nil {
			return nil, fmt.Errorf("variants: path %q: %w", s, err)
		}
		for _, mapped := range pathsIn(obj, p) {
			for _, c := range expand(obj, mapped) {
				if !seen[c.String()] && !touchesIdentity(c) && holdsParent(obj, c) {
					seen[c.String()] = true
					concrete = append(concrete, c)
				}
			}
		}
	}
	out := make([][]Variant, len(TypeValues))
	for i, value := range TypeValues {
		for _, c := range concrete {
			m := setTo(kindRetype, c, value)
			v, ok := m.apply(deepCopy(obj)).(map[string]any)
			if ok && render(v) != render(obj) {
				out[i] = append(out[i], Variant{Name: m.name, Object: v})
			}
		}
	}
	return out, nil
}

// holdsParent says whether obj has, where p's last step goes, a map (for
// a key) or a list (for an index).
func holdsParent(obj map[string]any, p path) bool {
	v, _ := get(obj, p[:len(p)-1])
	switch p[len(p)-1].(type) {
	case string:
		_, ok := v.(map[string]any)
		return ok
	case int:
		_, ok := v.([]any)
		return ok
	}
	return false
}
