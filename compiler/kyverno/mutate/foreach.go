package mutate

import (
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/celenv"
)

// A mutate.foreach entry patches the object once for each element of its
// list, each element's patch applied to the object the previous one
// returned (pkg/engine/handlers/mutation/common.go mutateElements). A
// JSONPatch expression is computed on one object, so the translation
// accepts the patches whose per-element operations, computed on the
// entry's object, give that same result when applied one after another:
//
//   - a patchStrategicMerge without anchors and without lists: every
//     element merges the same keys, so the last element's values win
//     either way; where a key holds {{ }} variables (keys.go), each
//     element adds its own key, and only the first element patched adds
//     the maps the object misses (the next ones find them there);
//   - a patchStrategicMerge that is only a PodSpec list (under its maps)
//     of elements without anchors, each named by a literal or a {{ }}
//     variable: each element's merge changes only the list element of its
//     name, in place; kustomize's merge then moves the named elements to
//     the front, once per element, which is one reorder at the end;
//   - a patchesJson6902 whose every path holds {{elementIndex}} as one
//     segment above the last: the elements' operations touch disjoint
//     parts of the object.
//
// Anything else is refused with an *Error.

// Elements names what a foreach entry's patch is evaluated over, as CEL.
type Elements struct {
	// List is the entry's elements; Applied the indexes into List of the
	// elements Kyverno patches, in the order it patches them.
	List, Applied string
	// Element and Index name one element and its index (an int) in the
	// patch; Scope reads {{ }} variables with them.
	Element, Index string
	Scope          conditions.Scope
}

// each is the CEL list of JSONPatch of every applied element: ops is one
// element's, over e.Element and e.Index.
func (e Elements) each(ops string) string {
	if ops == "[]" {
		return "[]"
	}
	return e.Applied + ".map(" + e.Index + ", " + bind(e.Element, e.List+"["+e.Index+"]", ops) + ").flatten()"
}

// ForEachStrategicMerge translates a foreach entry's patchStrategicMerge
// into the CEL list of JSONPatch of all its elements.
func ForEachStrategicMerge(overlay any, e Elements) (string, error) {
	m, ok := overlay.(map[string]any)
	if !ok {
		return "", errorf("patchStrategicMerge", "an overlay that is not a map is not translated")
	}
	r := &reader{scope: e.Scope, dynamicNames: true, forEach: true}
	n, err := r.readMap(m, "patchStrategicMerge", "")
	if err != nil {
		return "", err
	}
	if hasKind(n, addKey) || hasConditions(n) || hasAnchoredElements(n) {
		return "", errorf("patchStrategicMerge", "anchors in a foreach entry's patchStrategicMerge are not translated (each element's preprocessing sees the object the previous element patched)")
	}
	w := &walker{scope: e.Scope}
	if !hasLists(n) {
		if hasDynamicKeys(n) {
			w.first = e.Index + " == " + e.Applied + "[0]"
		}
		ops, err := w.merge(n, at{present: "true", value: "object"}, pointer{}, nil)
		if err != nil {
			return "", err
		}
		return e.each(w.keys.wrap(ops)), nil
	}
	keys, l := listChain(n)
	if l == nil {
		return "", errorf("patchStrategicMerge", "a foreach entry's patchStrategicMerge with a list is translated when the list, under its maps, is all it holds")
	}
	return w.listForEach(keys, l, e)
}

// hasAnchoredElements says whether a list under n has elements with
// anchors.
func hasAnchoredElements(n *mapNode) bool {
	for _, f := range n.fields {
		if f.list != nil && len(f.list.conditional)+len(f.list.global) > 0 || f.child != nil && hasAnchoredElements(f.child) {
			return true
		}
	}
	return false
}

// listChain is the keys from the root to the one list of n, when n is
// only maps of one key down to it.
func listChain(n *mapNode) ([]string, *listNode) {
	var keys []string
	for {
		if len(n.fields) != 1 {
			return nil, nil
		}
		f := n.fields[0]
		keys = append(keys, f.name)
		switch {
		case f.list != nil:
			return keys, f.list
		case f.child != nil:
			n = f.child
		default:
			return nil, nil
		}
	}
}

// listForEach merges every applied element's list elements into the
// object's list at keys: in place, by name, then one reorder (the names
// of the last patched element first); where the object has no list
// (missing or null, or a parent missing or null), the list the merges
// would build is added.
func (w *walker) listForEach(keys []string, l *listNode, e Elements) (string, error) {
	objList := w.name("L")
	var merges, pairs []string
	for j, el := range l.plain {
		name, err := w.elementName(el, l.names[j])
		if err != nil {
			return "", err
		}
		nm, found, k := w.name("nm"), w.name("found"), w.name("k")
		m, err := w.merge(el, at{present: "true", value: objList + "[" + found + "[0]]"}, pointerOf(keys).index(found+"[0]"), nil)
		if err != nil {
			return "", err
		}
		cleaned, _, err := w.cleanedMap(el, nil)
		if err != nil {
			return "", err
		}
		item := objList + "[" + k + "]"
		find := "lists.range(size(" + objList + ")).filter(" + k + ", type(" + item + ") == map && 'name' in " + item + " && " + celenv.EqualsSameKind(item+".name", nm) + ")"
		merges = append(merges, bind(nm, name, bind(found, find, "size("+found+") > 0 ? "+paren(m)+" : []")))
		pairs = append(pairs, bind(nm, name, "type("+nm+") != string || "+nm+" == '' ? "+raise("a foreach element's list element is not named by a string; not translated")+" : [dyn("+nm+"), dyn("+cleaned+")]"))
	}
	groups, names, q, g, p, nmv, f := w.name("groups"), w.name("names"), w.name("q"), w.name("g"), w.name("p"), w.name("n"), w.name("f")
	grouped := e.Applied + ".map(" + e.Index + ", " + bind(e.Element, e.List+"["+e.Index+"]", "["+strings.Join(pairs, ", ")+"]") + ")"
	lastFirst := "lists.range(size(" + groups + ")).map(" + q + ", " + groups + "[size(" + groups + ") - 1 - " + q + "]).map(" + g + ", " + g + ".map(" + p + ", " + p + "[0])).flatten()"
	newValue := func(name string) string {
		return bind(f, groups+".flatten().filter("+p+", "+p+"[0] == "+name+")", f+"[size("+f+") - 1][1]")
	}
	j2 := w.name("j")
	distinct := "lists.range(size(" + names + ")).filter(" + j2 + ", !(" + names + "[" + j2 + "] in lists.range(" + j2 + ").map(" + q + ", " + names + "[" + q + "]))).map(" + j2 + ", " + names + "[" + j2 + "])"
	built := distinct + ".map(" + nmv + ", " + newValue(nmv) + ")"
	inPlace := concat([]string{e.each(concat(merges)), w.reorder(objList, names, newValue, pointerOf(keys))})
	body := w.chainOps(keys, 0, at{present: "true", value: "object"}, built, bind(objList, "object"+chainValue(keys), inPlace))
	return "size(" + e.Applied + ") == 0 ? [] : " + bind(groups, grouped, bind(names, lastFirst, body)), nil
}

// elementName is the CEL of a list element's name: its literal, or its
// {{ }} variable in the element's scope.
func (w *walker) elementName(el *mapNode, literal string) (string, error) {
	if !strings.Contains(literal, "{{") {
		return quote(literal), nil
	}
	for _, f := range el.fields {
		if f.name == "name" {
			v, err := w.value(f.value, f.path)
			return "dyn(" + v + ")", err
		}
	}
	return quote(literal), nil
}

func pointerOf(keys []string) pointer {
	p := pointer{}
	for _, k := range keys {
		p = p.key(k)
	}
	return p
}

func chainValue(keys []string) string {
	out := ""
	for _, k := range keys {
		out += "[" + quote(k) + "]"
	}
	return out
}

// chainOps goes down keys from the place a (the value at keys[:d], there):
// where a map misses the next key or a value is null, the rest is added
// with the built list at its end; a value of another kind fails as
// kustomize's merge fails; at the list, inPlace.
func (w *walker) chainOps(keys []string, d int, a at, built, inPlace string) string {
	if d == len(keys) {
		return "(type(" + a.value + ") == list ? " + inPlace + " : type(" + a.value + ") == null_type ? " + op("add", pointerOf(keys), built) + " : " + raiseList("failed to preprocess the patch: the object holds something else than a list where the overlay has one") + ")"
	}
	nested := func(from int) string {
		v := built
		for i := len(keys) - 1; i >= from; i-- {
			v = "{" + quote(keys[i]) + ": dyn(" + v + ")}"
		}
		return v
	}
	absent := op("add", pointerOf(keys[:d+1]), nested(d+1))
	c := at{present: "true", value: a.value + "[" + quote(keys[d]) + "]"}
	down := "(" + quote(keys[d]) + " in " + a.value + " ? " + w.chainOps(keys, d+1, c, built, inPlace) + " : " + absent + ")"
	if d == 0 {
		return down
	}
	return "(type(" + a.value + ") == map ? " + down + " : type(" + a.value + ") == null_type ? " + op("add", pointerOf(keys[:d]), nested(d)) + " : " + raiseList("failed to patch resource: kustomize cannot merge a map into a value of another kind") + ")"
}
