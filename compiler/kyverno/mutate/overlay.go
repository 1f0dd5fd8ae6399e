package mutate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
)

// keyKind is what a key of an overlay map is to Kyverno's preprocessing.
type keyKind int

const (
	plainKey  keyKind = iota
	addKey            // +(key): added when the object does not have key
	condKey           // (key): the map applies only when the condition holds
	globalKey         // <(key): the whole patch applies only when it holds
)

// mapNode is one map of the overlay, its fields in the order Kyverno's
// preprocessing visits them (the overlay goes through JSON, so sorted by
// the key as written).
type mapNode struct {
	fields []*field
}

// field is one key of an overlay map.
type field struct {
	raw, name string
	kind      keyKind
	value     any      // scalar value, or the condition's pattern
	child     *mapNode // a map value
	list      *listNode
	path      string // where it is written: patchStrategicMerge.spec.containers[0].image
}

// listNode is a list of maps merged by name: elements without anchors
// are merged as they are; elements with conditional or +() anchors are
// applied to each element of the object that meets them; elements with
// global anchors only decide whether the patch applies.
type listNode struct {
	plain, conditional, global []*mapNode
	names                      []string // the name of each plain element
	hadElements                bool
}

// mergedByName are the PodSpec lists kustomize merges by the key name.
var mergedByName = map[string]bool{"containers": true, "initContainers": true, "ephemeralContainers": true, "volumes": true, "imagePullSecrets": true}

// podSpecPaths are where a PodSpec is in the kinds Kyverno's autogen
// writes rules for.
var podSpecPaths = map[string]bool{"spec": true, "spec.template.spec": true, "spec.jobTemplate.spec.template.spec": true}

func parseKey(raw string) (keyKind, string, bool) {
	switch {
	case strings.HasPrefix(raw, "+(") && strings.HasSuffix(raw, ")"):
		return addKey, raw[2 : len(raw)-1], true
	case strings.HasPrefix(raw, "<(") && strings.HasSuffix(raw, ")"):
		return globalKey, raw[2 : len(raw)-1], true
	case strings.HasPrefix(raw, "(") && strings.HasSuffix(raw, ")"):
		return condKey, raw[1 : len(raw)-1], true
	case len(raw) > 2 && strings.ContainsAny(raw[:1], "=X^") && raw[1] == '(' && strings.HasSuffix(raw, ")"):
		return plainKey, raw, false
	}
	return plainKey, raw, true
}

// reader reads an overlay; inElement is set inside a list element, where
// Kyverno's preprocessing keeps state across the object's elements.
type reader struct {
	inElement bool
	// scope is where {{ }} variables are read: a foreach element's.
	scope conditions.Scope
	// dynamicNames accepts a list element named by a {{ }} variable
	// (a foreach entry's patch, for one element).
	dynamicNames bool
	// forEach says the overlay is a foreach entry's.
	forEach bool
}

// readMap reads the overlay map m at path; objPath is its place in the
// object (dotted keys) outside list elements.
func (r *reader) readMap(m map[string]any, path, objPath string) (*mapNode, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := &mapNode{}
	seen := map[string]bool{}
	for _, raw := range keys {
		kind, name, ok := parseKey(raw)
		fp := path + "." + raw
		if !ok {
			return nil, errorf(fp, "the anchor %s is a validate anchor; Kyverno's mutate preprocessing does not read it", raw[:2])
		}
		if strings.HasPrefix(raw, "$") {
			return nil, errorf(fp, "strategic merge directives ($patch, $retainKeys, $setElementOrder...) are not translated")
		}
		if seen[name] {
			return nil, errorf(fp, "the key %q is written twice (with and without an anchor)", name)
		}
		seen[name] = true
		f := &field{raw: raw, name: name, kind: kind, path: fp}
		if f.isDynamic() {
			if err := r.readDynamicKey(raw, kind, m[raw], fp); err != nil {
				return nil, err
			}
		}
		if err := r.readField(f, m[raw], join(objPath, name)); err != nil {
			return nil, err
		}
		n.fields = append(n.fields, f)
	}
	return n, nil
}

func join(objPath, key string) string {
	if objPath == "" {
		return key
	}
	return objPath + "." + key
}

func (r *reader) readField(f *field, v any, objPath string) error {
	if f.kind == condKey || f.kind == globalKey {
		return readCondition(f, v)
	}
	switch x := v.(type) {
	case nil:
		return errorf(f.path, "null in a strategic merge patch deletes the key; that is not translated")
	case map[string]any:
		child, err := r.readMap(x, f.path, objPath)
		if err != nil {
			return err
		}
		if f.kind == addKey && hasConditions(child) {
			return errorf(f.path, "conditions inside a +() anchor's value are checked against a copy Kyverno changes as it goes; not translated")
		}
		f.child = child
	case []any:
		if f.kind == addKey {
			return errorf(f.path, "a list under a +() anchor is not translated")
		}
		if r.inElement {
			return errorf(f.path, "a list inside a list element is not translated")
		}
		if !mergedByName[f.name] || !podSpecPaths[strings.TrimSuffix(objPath, "."+f.name)] {
			return errorf(f.path, "only the PodSpec lists %s are translated (kustomize merges them by name); other lists depend on the kind's schema", "containers, initContainers, ephemeralContainers, volumes and imagePullSecrets")
		}
		l, err := r.readList(x, f.path)
		if err != nil {
			return err
		}
		f.list = l
	default:
		if err := r.scalarCheck(v, f.path); err != nil {
			return err
		}
		f.value = v
	}
	return nil
}

func (r *reader) scalarCheck(v any, path string) error {
	_, err := value(v, path, r.scope, new(int))
	return err
}

// readCondition reads a conditional or global anchor: its value is a
// pattern Kyverno matches with validate.MatchPattern; a scalar or {}
// (other maps stay in the patch under the anchor's own key).
func readCondition(f *field, v any) error {
	switch x := v.(type) {
	case map[string]any:
		if len(x) != 0 {
			return errorf(f.path, "a condition on a map is kept in Kyverno's patch under its anchored key; only scalar conditions and {} are translated")
		}
	case []any, nil:
		return errorf(f.path, "a condition on a list or null is not translated")
	case string:
		if strings.Contains(x, "{{") || strings.Contains(x, "$(") {
			return errorf(f.path, "{{ }} variables and $( ) references in a condition are not translated")
		}
	case float64:
		if _, err := value(x, f.path, conditions.Scope{}, new(int)); err != nil {
			return err
		}
	}
	f.value = v
	return nil
}

func (r *reader) readList(items []any, path string) (*listNode, error) {
	l := &listNode{hadElements: len(items) > 0}
	for i, it := range items {
		ep := fmt.Sprintf("%s[%d]", path, i)
		m, ok := it.(map[string]any)
		if !ok {
			return nil, errorf(ep, "a list element that is not a map is not translated")
		}
		er := &reader{inElement: true, scope: r.scope, dynamicNames: r.dynamicNames, forEach: r.forEach}
		n, err := er.readMap(m, ep, "")
		if err != nil {
			return nil, err
		}
		switch {
		case hasKind(n, globalKey):
			if hasKind(n, addKey) || hasKind(n, condKey) {
				return nil, errorf(ep, "an element with both a global anchor and other anchors is not translated")
			}
			l.global = append(l.global, n)
		case hasKind(n, condKey) || hasKind(n, addKey):
			l.conditional = append(l.conditional, n)
		default:
			name, ok := m["name"].(string)
			if !ok || strings.Contains(name, "{{") && !r.dynamicNames {
				return nil, errorf(ep, "an element without anchors needs a literal name, the key kustomize merges it by")
			}
			l.plain = append(l.plain, n)
			l.names = append(l.names, name)
		}
	}
	return l, nil
}

// hasKind says whether n or a map under it has a key of kind k.
func hasKind(n *mapNode, k keyKind) bool {
	for _, f := range n.fields {
		if f.kind == k || (f.child != nil && hasKind(f.child, k)) {
			return true
		}
	}
	return false
}

func hasConditions(n *mapNode) bool { return hasKind(n, condKey) || hasKind(n, globalKey) }

// plainify is the map after Kyverno renamed every +() key under it to
// the plain key (it was added where nothing was).
func plainify(n *mapNode) *mapNode {
	out := &mapNode{}
	for _, f := range n.fields {
		g := *f
		if g.kind == addKey {
			g.kind = plainKey
		}
		if g.child != nil {
			g.child = plainify(g.child)
		}
		out.fields = append(out.fields, &g)
	}
	return out
}
