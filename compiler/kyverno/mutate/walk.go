package mutate

import (
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
)

// Walk results, as Kyverno's preprocessing (walkMap, processListOfMaps)
// ends on a part of the overlay: "" it went through; 'C' a conditional
// anchor is not met (ConditionError); 'G' a global anchor is not met
// (GlobalConditionError); 'E' another error (the object holds something
// else than a list where the overlay has one), which fails the rule.

// walker writes the CEL of the walk; fresh numbers bound names.
type walker struct {
	fresh int
	// scope is where {{ }} variables of the patch are read.
	scope conditions.Scope
	// keyNames are the names bound to the keys with variables, keys
	// their CEL (keys.go); checked the maps whose keys are checked to
	// differ once substituted.
	keyNames map[*field]string
	keys     keyBindings
	checked  map[*mapNode]bool
	// first, in a foreach entry's patch, is the CEL bool saying the element
	// is the first patched: only it adds the maps the object misses (the
	// next elements' patches find them).
	first string
}

func (w *walker) value(v any, path string) (string, error) { return value(v, path, w.scope, &w.fresh) }

func (w *walker) name(prefix string) string {
	w.fresh++
	return prefix + itoa(w.fresh)
}

// walk is the CEL of walkMap on n at a: the +() anchors are handled
// first (they never fail), then every global anchor, then every
// conditional anchor, then the plain keys in order.
func (w *walker) walk(n *mapNode, a at) (string, error) {
	globals, conds, err := w.conditions(n, a)
	if err != nil {
		return "", err
	}
	var children []string
	for _, f := range n.fields {
		switch {
		case f.kind != plainKey:
		case f.child != nil && (hasConditions(f.child) || hasLists(f.child)):
			c, err := w.walk(f.child, a.child(f.name))
			if err != nil {
				return "", err
			}
			children = append(children, c)
		case f.list != nil:
			c, err := w.listWalk(f.list, a.child(f.name))
			if err != nil {
				return "", err
			}
			if c != "''" {
				children = append(children, c)
			}
		}
	}
	out := "''"
	for i := len(children) - 1; i >= 0; i-- {
		if out == "''" {
			out = children[i]
			continue
		}
		v := w.name("w")
		out = bind(v, children[i], v+" != '' ? "+v+" : "+out)
	}
	if len(conds) > 0 {
		out = "!(" + strings.Join(conds, " && ") + ") ? 'C' : " + out
	}
	if len(globals) > 0 {
		out = "!(" + strings.Join(globals, " && ") + ") ? 'G' : " + out
	}
	return out, nil
}

func hasLists(n *mapNode) bool {
	for _, f := range n.fields {
		if f.list != nil || (f.child != nil && hasLists(f.child)) {
			return true
		}
	}
	return false
}

// conditions are the CEL of n's global and conditional anchors on a:
// the key is in the object and its value matches the anchor's pattern
// as validate.MatchPattern matches it (a scalar of the object read as
// its YAML text, as Kyverno's convertRNodeToInterface reads it).
func (w *walker) conditions(n *mapNode, a at) (globals, conds []string, err error) {
	for _, f := range n.fields {
		if f.kind != condKey && f.kind != globalKey {
			continue
		}
		c, err := w.condition(f, a)
		if err != nil {
			return nil, nil, err
		}
		if f.kind == globalKey {
			globals = append(globals, c)
		} else {
			conds = append(conds, c)
		}
	}
	return globals, conds, nil
}

func (w *walker) condition(f *field, a at) (string, error) {
	v := w.name("c")
	p := f.value
	if _, isMap := p.(map[string]any); !isMap {
		p = scalarText(p)
	}
	e, err := pattern.Translate(p, v)
	if err != nil {
		if pe, ok := err.(*pattern.Error); ok {
			return "", errorf(f.path, "%s", pe.Reason)
		}
		return "", errorf(f.path, "%v", err)
	}
	text := "type(" + v + "0) == map || type(" + v + "0) == list || type(" + v + "0) == string ? " + v + "0 : type(" + v + "0) == null_type ? 'null' : type(" + v + "0) == double ? " + raise("a number that is not an integer in a condition is not translated") + " : string(" + v + "0)"
	c := a.child(f.name)
	return "(" + c.present + " && " + bind(v+"0", c.value, bind(v, text, "("+e.Result+") == 'pass'")) + ")", nil
}

// scalarText is a scalar pattern as Kyverno reads it from the YAML node:
// its text.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		s, _ := value(x, "", conditions.Scope{}, new(int))
		return s
	}
	return ""
}

// listWalk is processListOfMaps on l at a: an error when the object
// holds something else than a list; 'G' when a global element is met by
// no element of the object (or the list is missing).
func (w *walker) listWalk(l *listNode, a at) (string, error) {
	var gs []string
	for _, g := range l.global {
		e := w.name("e")
		we, err := w.walk(g, at{present: "true", value: e})
		if err != nil {
			return "", err
		}
		none, err := w.walk(g, at{present: "false", value: "dyn(null)"})
		if err != nil {
			return "", err
		}
		gs = append(gs, "("+a.present+" ? type("+a.value+") == list && !"+a.value+".exists("+e+", ("+we+") == '') && "+a.value+".exists("+e+", ("+we+") == 'G') : ("+none+") == 'G')")
	}
	// A null list is kustomize's missing-or-null: no elements, no error.
	notList := a.present + " && type(" + a.value + ") != list && type(" + a.value + ") != null_type"
	out := "''"
	if len(gs) > 0 {
		out = "(" + strings.Join(gs, " || ") + ") ? 'G' : ''"
	}
	return "(" + notList + ") ? 'E' : " + out, nil
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
