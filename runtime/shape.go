package runtime

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/admitc/admitc/ir"
)

// shapeCheck checks an object against the SchemaReads of a typed policy:
// every read field that is there holds a value of the shape read (never
// null), every field read as present is there, and no field the schema
// does not have (read as ir.SchemaAbsent) is, no two elements of a list
// read with a UniqueKey share that key's value, and a string read with a
// Format is of that format (a quantity parses).
type shapeCheck struct{ root *shapeNode }

type shapeNode struct {
	shape   string
	present bool
	enum    []string
	unique  string
	format  string
	fields  map[string]*shapeNode
	items   *shapeNode
}

func newShapeCheck(reads []ir.SchemaRead) (*shapeCheck, error) {
	root := &shapeNode{shape: "object"}
	for _, r := range reads {
		steps, err := ir.SchemaPathSteps(r.Path)
		if err != nil {
			return nil, err
		}
		n := root
		for _, s := range steps {
			n = n.child(s)
		}
		n.shape, n.present, n.enum, n.unique, n.format = r.Shape, r.Present, r.Enum, r.UniqueKey, r.Format
	}
	return &shapeCheck{root: root}, nil
}

func (n *shapeNode) child(step string) *shapeNode {
	if step == "[]" {
		if n.items == nil {
			n.items = &shapeNode{}
		}
		return n.items
	}
	if n.fields == nil {
		n.fields = map[string]*shapeNode{}
	}
	c := n.fields[step]
	if c == nil {
		c = &shapeNode{}
		n.fields[step] = c
	}
	return c
}

// fits says whether v, the value of a field that is there, is shaped as
// the node says, and its read fields too.
func (n *shapeNode) fits(v any) bool {
	if v == nil || !hasShape(v, n.shape) {
		return false
	}
	if s, ok := v.(string); ok && len(n.enum) > 0 && !slices.Contains(n.enum, s) {
		return false
	}
	if n.format != "" && !hasFormat(v, n.format) {
		return false
	}
	switch t := v.(type) {
	case map[string]any:
		if n.items != nil {
			// A map read as a whole: every value (a label's, an annotation's).
			for _, e := range t {
				if !n.items.fits(e) {
					return false
				}
			}
		}
		for k, c := range n.fields {
			cv, ok := t[k]
			switch {
			case !ok && c.present:
				return false
			case !ok:
			case c.shape == ir.SchemaAbsent || !c.fits(cv):
				return false
			}
		}
	case []any:
		if n.unique != "" && !uniqueBy(t, n.unique) {
			return false
		}
		if n.items != nil {
			for _, e := range t {
				if !n.items.fits(e) {
					return false
				}
			}
		}
	}
	return true
}

// hasFormat says whether v is a string of format, as the API server
// makes sure before admission: a quantity parses (a number is one too,
// but admission sees it as a string), and is written in its canonical form
// where read as one, a DNS label is one, a label's value is one.
func hasFormat(v any, format string) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch format {
	case ir.FormatQuantity:
		_, err := resource.ParseQuantity(s)
		return err == nil
	case ir.FormatCanonicalQuantity:
		q, err := resource.ParseQuantity(s)
		return err == nil && q.String() == s
	case ir.FormatPlainQuantity:
		q, err := resource.ParseQuantity(s)
		return err == nil && q.String() == s && !strings.Contains(s, "e-") && !strings.Contains(s, "E-")
	case ir.FormatDNSLabel:
		return len(validation.IsDNS1123Label(s)) == 0
	case ir.FormatLabelValue:
		return len(validation.IsValidLabelValue(s)) == 0
	}
	return false
}

// uniqueBy says no two map elements of l hold one value at key.
func uniqueBy(l []any, key string) bool {
	seen := map[any]bool{}
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		v, ok := m[key]
		if !ok {
			continue
		}
		if _, comparable := v.(string); !comparable {
			continue
		}
		if seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

// hasShape says whether v holds a value of a schema shape ("" is not
// checked: a step on the way to a read field).
func hasShape(v any, shape string) bool {
	switch shape {
	case "", "unknown":
		return true
	case "object", "map":
		_, ok := v.(map[string]any)
		return ok
	case "list":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		return isInt(v)
	case "number":
		_, isFloat := v.(float64)
		return isInt(v) || isFloat
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "int-or-string":
		_, ok := v.(string)
		return ok || isInt(v)
	}
	return false
}

// isInt says whether v is an integer as the runtime decodes JSON (a float
// is not an integer field's value: the API server refuses it).
func isInt(v any) bool {
	switch v.(type) {
	case int64, int32, int:
		return true
	}
	return false
}

func objectOf(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	return u.Object
}
