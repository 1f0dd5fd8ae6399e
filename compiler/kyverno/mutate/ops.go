package mutate

import (
	"strconv"
	"strings"

	"github.com/admitc/admitc/internal/celenv"
)

// addState says, for a +() key inside a list element, whether Kyverno's
// copy of the element still holds it: a CEL bool, true when the key was
// dropped (the first element of the object that reached the map had it).
type addState map[*field]string

// merge is the JSONPatch operations of kustomize's merge of the
// preprocessed map n into the object at a (pointer p): key by key where
// the object holds a map, the whole map where it holds nothing or
// something else.
func (w *walker) merge(n *mapNode, a at, p pointer, st addState) (string, error) {
	if err := w.siblingCheck(n); err != nil {
		return "", err
	}
	whole, dyn, err := w.cleanedMap(n, st)
	if err != nil {
		return "", err
	}
	if whole == "" && !dyn && !hasConditionalLists(n) {
		return "[]", nil
	}
	absent, adds := "[]", false
	if whole != "" {
		absent = op("add", p, whole)
	}
	if dyn {
		if absent, adds, err = w.absentAdds(n, p, st); err != nil {
			return "", err
		}
	}
	var ops []string
	for _, f := range n.fields {
		o, err := w.fieldOps(f, a, p, st)
		if err != nil {
			return "", err
		}
		ops = append(ops, o)
	}
	if a.present == "true" && strings.HasPrefix(a.value, "object") && a.value == "object" {
		return concat(ops), nil
	}
	mismatch := ""
	switch {
	case whole != "":
		mismatch = kindMismatch(a, "map")
	case dyn && adds:
		mismatch = a.present + " && type(" + a.value + ") != null_type ? " + raiseList("failed to patch resource: kustomize cannot merge a map into a value of another kind") + " : "
	case dyn && !(a.present == "true" && a.value == "object"):
		mismatch = a.present + " && type(" + a.value + ") != null_type ? (size(" + absent + ") > 0 ? " + raiseList("failed to patch resource: kustomize cannot merge a map into a value of another kind") + " : []) : "
	}
	return "(" + a.isMap() + " ? " + paren(concat(ops)) + " : " + mismatch + absent + ")", nil
}

// hasConditionalLists says whether a list under n has conditional
// elements, which patch the object's elements without being in the
// cleaned value.
func hasConditionalLists(n *mapNode) bool {
	for _, f := range n.fields {
		if f.list != nil && len(f.list.conditional) > 0 || f.child != nil && hasConditionalLists(f.child) {
			return true
		}
	}
	return false
}

func paren(s string) string {
	if strings.Contains(s, " + ") {
		return "(" + s + ")"
	}
	return s
}

func (w *walker) fieldOps(f *field, a at, p pointer, st addState) (string, error) {
	c, err := w.child(a, f)
	if err != nil {
		return "", err
	}
	cp, err := w.pointerTo(p, f)
	if err != nil {
		return "", err
	}
	kind := f.kind
	if kind == addKey {
		if dropped, ok := st[f]; ok {
			// In a list element: the copy's key is dropped or renamed
			// once, for every later element.
			body, err := w.fieldOps(&field{name: f.name, kind: plainKey, value: f.value, child: plainifyOrNil(f.child), path: f.path}, a, p, st)
			if err != nil {
				return "", err
			}
			return "(" + dropped + " ? [] : " + paren(body) + ")", nil
		}
		v, err := w.cleanedValue(f, st)
		if err != nil || v == "" {
			return "[]", err
		}
		return "(" + c.present + " ? [] : " + op("add", cp, v) + ")", nil
	}
	switch {
	case kind != plainKey:
		return "[]", nil
	case f.child != nil:
		return w.merge(f.child, c, cp, st)
	case f.list != nil:
		return w.listOps(f.list, c, cp)
	}
	v, err := w.value(f.value, f.path)
	if err != nil {
		return "", err
	}
	add := op("add", cp, v)
	if t := w.asText(f.value, v); t != "" {
		add = "(" + c.present + " && type(" + c.value + ") == string ? " + op("add", cp, t) + " : " + add + ")"
	}
	return "(" + c.present + " && (type(" + c.value + ") == map || type(" + c.value + ") == list) ? " + raiseList("failed to patch resource: kustomize cannot merge a scalar into a map or list") + " : " + add + ")", nil
}

// asText is the patch's scalar value v (raw, as CEL v) as kustomize's
// merge writes it over a string of the object: a boolean or a number
// becomes its text (the object's string node keeps its quoted style), so
// a string stays a string. Empty when the value is a string or not a
// scalar. A number computed at admission that is not an integer raises:
// admitc does not write it as YAML does.
func (w *walker) asText(raw any, v string) string {
	switch x := raw.(type) {
	case bool:
		return quote(strconv.FormatBool(x))
	case float64, int64, int:
		return quote(v)
	case string:
		if !strings.Contains(x, "{{") {
			return ""
		}
		n := w.name("tx")
		return bind(n, v, "type("+n+") == bool || type("+n+") == int || type("+n+") == uint ? dyn(string("+n+")) : type("+n+") == double ? "+
			"("+n+" == double(int("+n+")) && "+n+" > -1e15 && "+n+" < 1e15 ? dyn(string(int("+n+"))) : "+raise("admitc does not write a number that is not an integer as text over a string of the object")+") : "+n)
	}
	return ""
}

// kindMismatch is the start of a CEL conditional failing as kustomize's
// merge fails where the object holds something other than what the patch
// has there (null is nothing).
func kindMismatch(a at, kind string) string {
	if a.present == "true" && a.value == "object" {
		return ""
	}
	return a.present + " && type(" + a.value + ") != null_type ? " + raiseList("failed to patch resource: kustomize cannot merge a "+kind+" into a value of another kind") + " : "
}

func plainifyOrNil(n *mapNode) *mapNode {
	if n == nil {
		return nil
	}
	return plainify(n)
}

// cleanedMap is the CEL value of n as Kyverno's patch holds it where the
// object has nothing: +() keys renamed, conditions deleted, empty maps and
// emptied lists deleted; "" when nothing is left. It is dynamic when n
// holds +() keys of a list element whose state st decides at admission,
// or keys with variables: the value is then written by absentOps instead.
func (w *walker) cleanedMap(n *mapNode, st addState) (string, bool, error) {
	if hasDynamicKeys(n) {
		return "", true, nil
	}
	var parts []string
	for _, f := range n.fields {
		if f.kind == condKey || f.kind == globalKey {
			continue
		}
		if stateful(f, st) {
			return "", true, nil
		}
		v, dyn, err := w.cleanedField(f, st)
		if err != nil || dyn {
			return "", dyn, err
		}
		if v != "" {
			parts = append(parts, quote(f.name)+": dyn("+v+")")
		}
	}
	if len(parts) == 0 {
		return "", false, nil
	}
	return "{" + strings.Join(parts, ", ") + "}", false, nil
}

// stateful says whether f is a +() key whose state is decided at admission.
func stateful(f *field, st addState) bool {
	d, ok := st[f]
	return ok && f.kind == addKey && d != "false"
}

// absentOps adds the dynamic map n at p where the object has nothing:
// an empty map, then each field, when something is left.
func (w *walker) absentOps(n *mapNode, p pointer, st addState) (string, error) {
	ops, _, err := w.absentAdds(n, p, st)
	return ops, err
}

// absentAdds is absentOps, and whether its operations always add
// something (a field is left whatever the +() states are: then no CEL
// asks, and a caller need not ask either).
func (w *walker) absentAdds(n *mapNode, p pointer, st addState) (string, bool, error) {
	var nonEmpty, ops []string
	always := false
	for _, f := range n.fields {
		if f.kind == condKey || f.kind == globalKey {
			continue
		}
		cp, err := w.pointerTo(p, f)
		if err != nil {
			return "", false, err
		}
		if stateful(f, st) {
			g := &field{name: f.name, kind: plainKey, value: f.value, child: plainifyOrNil(f.child), path: f.path}
			v, _, err := w.cleanedField(g, nil)
			if err != nil {
				return "", false, err
			}
			if v != "" {
				nonEmpty = append(nonEmpty, "!"+st[f])
				ops = append(ops, "("+st[f]+" ? [] : "+op("add", cp, v)+")")
			}
			continue
		}
		v, dyn, err := w.cleanedField(f, st)
		if err != nil {
			return "", false, err
		}
		switch {
		case dyn:
			o, adds, err := w.absentAdds(f.child, cp, st)
			if err != nil {
				return "", false, err
			}
			if o == "[]" {
				continue
			}
			always = always || adds
			nonEmpty = append(nonEmpty, "size("+o+") > 0")
			ops = append(ops, o)
		case v != "":
			always = true
			nonEmpty = append(nonEmpty, "true")
			ops = append(ops, op("add", cp, v))
		}
	}
	if len(ops) == 0 {
		return "[]", false, nil
	}
	empty := op("add", p, "{}")
	if w.first != "" {
		empty = "(" + w.first + " ? " + empty + " : [])"
	}
	if always {
		return empty + " + " + concat(ops), true, nil
	}
	return "(" + strings.Join(nonEmpty, " || ") + " ? " + empty + " + " + concat(ops) + " : [])", false, nil
}

// cleanedField is a field's cleaned value; dyn says it is a map holding
// +() keys decided at admission.
func (w *walker) cleanedField(f *field, st addState) (string, bool, error) {
	switch {
	case f.child != nil:
		return w.cleanedMap(f.child, st)
	case f.list != nil:
		var els []string
		for _, e := range f.list.plain {
			v, _, err := w.cleanedMap(e, nil)
			if err != nil {
				return "", false, err
			}
			if v != "" {
				els = append(els, v)
			}
		}
		if len(els) == 0 {
			return "", false, nil
		}
		return "[" + strings.Join(els, ", ") + "]", false, nil
	}
	v, err := w.value(f.value, f.path)
	return v, false, err
}

func (w *walker) cleanedValue(f *field, st addState) (string, error) {
	v, dyn, err := w.cleanedField(f, st)
	if err != nil || !dyn {
		return v, err
	}
	return "", errorf(f.path, "internal: a dynamic value where a static one is needed")
}

// listOps merges the list l into the object's list at a: each plain
// element into the object's element of the same name (or appended); each
// conditional element into every element of the object that meets its
// conditions and has a name, as Kyverno's handlePatternName makes one
// patch element per such element.
func (w *walker) listOps(l *listNode, a at, p pointer) (string, error) {
	whole, err := w.cleanedValue(&field{list: l}, nil)
	if err != nil {
		return "", err
	}
	ops, err := w.listMerge(l, a.value, p)
	if err != nil {
		return "", err
	}
	absent := "[]"
	if whole != "" {
		absent = op("add", p, whole)
	}
	return "(!(" + a.present + ") || type(" + a.value + ") == null_type ? " + absent + " : type(" + a.value + ") != list ? [] : " + ops + ")", nil
}

// listMerge is the operations on the object's list value, bound to a name.
func (w *walker) listMerge(l *listNode, list string, p pointer) (string, error) {
	value := list
	list = w.name("L")
	a := at{present: "true", value: list}
	var ops, names, news []string
	for i, e := range l.plain {
		o, n, err := w.plainElement(e, l.names[i], a.value, p)
		if err != nil {
			return "", err
		}
		ops = append(ops, o)
		names = append(names, "["+quote(l.names[i])+"]")
		news = append(news, quote(l.names[i])+": "+n)
	}
	for _, e := range l.conditional {
		o, n, err := w.conditionalElement(e, a.value, p)
		if err != nil {
			return "", err
		}
		ops = append(ops, o)
		names = append(names, n)
	}
	newsMap := "{" + strings.Join(news, ", ") + "}"
	ops = append(ops, w.reorder(a.value, concat(names), func(name string) string { return newsMap + "[" + name + "]" }, p))
	return bind(list, value, concat(ops)), nil
}

// reorder gives the list kustomize's merge gives in its prepend mode:
// first the elements the patch names, in the patch's order (plain
// elements, then each element a conditional element applied to), new
// ones added there, then the object's other elements in their order. The
// elements are moved one by one to their place; the object's list before
// the moves is list; news is the CEL of the element a name adds.
func (w *walker) reorder(list, patchNames string, news func(name string) string, p pointer) string {
	all, order, k, j, q := w.name("all"), w.name("order"), w.name("k"), w.name("j"), w.name("q")
	names := "lists.range(size(" + list + ")).map(" + j + ", type(" + list + "[" + j + "]) == map && 'name' in " + list + "[" + j + "] ? " + list + "[" + j + "].name : null)"
	distinct := "lists.range(size(" + all + ")).filter(" + j + ", !(" + all + "[" + j + "] in lists.range(" + j + ").map(" + q + ", " + all + "[" + q + "]))).map(" + j + ", " + all + "[" + j + "])"
	had, nm := w.name("had"), order+"["+k+"]"
	at := "lists.range(size(" + had + ")).filter(" + j + ", " + celenv.EqualsSameKind(had+"["+j+"]", nm) + ")[0]"
	// Before the k-th move, the first k places hold the moved elements; the
	// others keep their order.
	from := k + " + lists.range(" + at + ").filter(" + j + ", !(" + had + "[" + j + "] in lists.range(" + k + ").map(" + q + ", " + order + "[" + q + "])) ).size()"
	move := "[JSONPatch{op: 'move', from: " + p.index(from).cel() + ", path: " + p.index(k).cel() + "}]"
	add := "[JSONPatch{op: 'add', path: " + p.index(k).cel() + ", value: " + news(nm) + "}]"
	body := "lists.range(size(" + order + ")).map(" + k + ", " + nm + " in " + had + " ? " + move + " : " + add + ").flatten()"
	return bind(had, names, bind(all, patchNames, bind(order, distinct, body)))
}

// plainElement merges a plain element into the object's element of the
// same name; it returns the operations and the element's cleaned value
// (added by reorder when the object has no such element).
func (w *walker) plainElement(e *mapNode, name, list string, p pointer) (string, string, error) {
	ix, i := w.name("ix"), w.name("i")
	el := list + "[" + ix + "[0]]"
	m, err := w.merge(e, at{present: "true", value: el}, p.index(ix+"[0]"), nil)
	if err != nil {
		return "", "", err
	}
	whole, _, err := w.cleanedMap(e, nil)
	if err != nil {
		return "", "", err
	}
	find := "lists.range(size(" + list + ")).filter(" + i + ", type(" + list + "[" + i + "]) == map && 'name' in " + list + "[" + i + "] && " + celenv.EqualsString(list+"["+i+"].name", name) + ")"
	return bind(ix, find, "size("+ix+") > 0 ? "+paren(m)+" : []"), whole, nil
}

// conditionalElement is handlePatternName for every element of the
// object: the element's conditions met and a name, its copy merged in.
// It returns the operations and the CEL list of the names of the
// elements it applies to.
func (w *walker) conditionalElement(e *mapNode, list string, p pointer) (string, string, error) {
	i, ev := w.name("i"), w.name("el")
	el := at{present: "true", value: ev}
	walk, err := w.walk(e, el)
	if err != nil {
		return "", "", err
	}
	st := addState{}
	if err := w.states(e, list, at{present: "true", value: "E"}, "true", st); err != nil {
		return "", "", err
	}
	// Each state is the same for every element: bound once, by name.
	var bound [][2]string
	for _, f := range addFields(e) {
		if x, ok := st[f]; ok && x != "false" {
			n := w.name("added")
			bound = append(bound, [2]string{n, x})
			st[f] = n
		}
	}
	wrap := func(body string) string {
		for i := len(bound) - 1; i >= 0; i-- {
			body = bind(bound[i][0], bound[i][1], body)
		}
		return body
	}
	m, err := w.merge(e, el, p.index(i), st)
	if err != nil {
		return "", "", err
	}
	n := el.value + "['name']"
	named := "type(" + el.value + ") == map && 'name' in " + el.value + " && type(" + n + ") != null_type && !((type(" + n + ") == map || type(" + n + ") == list) && size(" + n + ") == 0)"
	applies := "(" + walk + ") == '' && " + named
	empty, err := w.emptyCopy(e, st)
	if err != nil {
		return "", "", err
	}
	elem := list + "[" + i + "]"
	names := wrap("lists.range(size(" + list + ")).filter(" + i + ", " + bind(ev, elem, applies+" && !("+empty+")") + ").map(" + i + ", " + bind(ev, elem, n) + ")")
	return wrap("lists.range(size(" + list + ")).map(" + i + ", " + bind(ev, elem, applies+" ? "+paren(m)+" : []") + ").flatten()"), names, nil
}

// addFields are the +() keys of the element pattern e, in order.
func addFields(e *mapNode) []*field {
	var out []*field
	for _, f := range e.fields {
		if f.kind == addKey {
			out = append(out, f)
		}
		if f.child != nil {
			out = append(out, addFields(f.child)...)
		}
	}
	return out
}

// emptyCopy says whether the element's copy is empty once its anchors are
// deleted (Kyverno then adds no patch element): CEL over st.
func (w *walker) emptyCopy(e *mapNode, st addState) (string, error) {
	whole, dyn, err := w.cleanedMap(e, st)
	if err != nil {
		return "", err
	}
	if !dyn {
		if whole == "" {
			return "true", nil
		}
		return "false", nil
	}
	o, err := w.absentOps(e, pointer{}, st)
	if err != nil {
		return "", err
	}
	return "size(" + o + ") == 0", nil
}

// states fills st with the CEL of each +() key of the element pattern e:
// whether the first element of the object whose walk reached the key's
// map had the key (Kyverno then dropped it from the shared copy).
// reach is the CEL (over the element named E) of the walk reaching n.
func (w *walker) states(n *mapNode, list string, a at, reach string, st addState) error {
	globals, conds, err := w.conditions(n, a)
	if err != nil {
		return err
	}
	passed := reach
	for _, c := range append(globals, conds...) {
		passed += " && " + c
	}
	for _, f := range n.fields {
		switch {
		case f.kind == addKey:
			first := "lists.range(size(" + list + ")).filter(j, " + strings.ReplaceAll(subst(reach, list+"[j]"), "\x00", "") + ")"
			st[f] = bind("first", first, "size(first) > 0 && "+subst(a.has(f.name), list+"[first[0]]"))
			if f.child != nil {
				markPlain(f.child, st)
			}
		case f.kind == plainKey && f.child != nil:
			if err := w.states(f.child, list, a.child(f.name), passed, st); err != nil {
				return err
			}
			if hasConditions(f.child) {
				wk, err := w.walk(f.child, a.child(f.name))
				if err != nil {
					return err
				}
				passed += " && (" + wk + ") == ''"
			}
		}
	}
	return nil
}

// markPlain: +() keys under a +() key are renamed together with it.
func markPlain(n *mapNode, st addState) {
	for _, f := range n.fields {
		if f.kind == addKey {
			st[f] = "false"
		}
		if f.child != nil {
			markPlain(f.child, st)
		}
	}
}

// subst writes the element placeholder E as expr.
func subst(cel, expr string) string {
	return replaceIdent(cel, "E", expr)
}

// replaceIdent replaces the identifier id (not inside quotes, not part
// of a longer identifier) with expr.
func replaceIdent(s, id, expr string) string {
	var b strings.Builder
	inQuote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inQuote != 0 {
			b.WriteByte(c)
			if c == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			} else if c == inQuote {
				inQuote = 0
			}
			continue
		}
		if c == '\'' || c == '"' {
			inQuote = c
			b.WriteByte(c)
			continue
		}
		if strings.HasPrefix(s[i:], id) && (i == 0 || !isIdentByte(s[i-1])) && (i+len(id) == len(s) || !isIdentByte(s[i+len(id)])) {
			b.WriteString(expr)
			i += len(id) - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
