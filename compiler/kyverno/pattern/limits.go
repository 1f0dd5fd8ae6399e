package pattern

import (
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxDepth is how deeply maps and lists may nest in a pattern. Each level
// nests the CEL a few levels deeper, and the API server's CEL parser
// refuses expressions nested more than 250 levels: a pattern of 35 nested
// conditional anchors already reaches it. Refusing deeper patterns before
// translating them also bounds the translation's own cost, which grows
// with the square of the depth (each level spells out its failure path).
const MaxDepth = 32

// checkDepth refuses a pattern nested deeper than MaxDepth, at the first
// map or list past it, in key order.
func checkDepth(p any, fp *field.Path, depth int) error {
	var children []any
	var paths []*field.Path
	switch t := p.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			children, paths = append(children, t[k]), append(paths, fp.Child(k))
		}
	case []any:
		for i, v := range t {
			children, paths = append(children, v), append(paths, fp.Index(i))
		}
	default:
		return nil
	}
	if depth >= MaxDepth {
		return errorf(fp, "a pattern nested deeper than %d levels is not translated: the API server's CEL parser refuses expressions nested more than 250 levels", MaxDepth)
	}
	for i, c := range children {
		if err := checkDepth(c, paths[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}
