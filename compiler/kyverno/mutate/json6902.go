package mutate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// JSON6902 translates a patchesJson6902 document (a YAML or JSON list of
// RFC 6902 operations) into a CEL list of JSONPatch, applied as Kyverno
// applies it (patchJSON6902.go, evanphx/json-patch with
// EnsurePathExistsOnAdd and AllowMissingPathOnRemove): add creates the
// maps and lists missing above its path, remove of a missing path does
// nothing, replace of a missing path fails.
func JSON6902(doc string) (string, error) {
	if strings.Contains(doc, "{{") || strings.Contains(doc, "$(") {
		return "", errorf("patchesJson6902", "{{ }} variables in patchesJson6902 are substituted in the text before it is parsed; not translated")
	}
	return (&walker{}).jsonOps(doc, "")
}

// jsonOps translates the operations of doc; a path segment elementIndex
// (a foreach entry's {{elementIndex}}) is the CEL int index.
func (w *walker) jsonOps(doc, index string) (string, error) {
	var ops []map[string]any
	if err := yaml.Unmarshal([]byte(doc), &ops); err != nil {
		return "", errorf("patchesJson6902", "not a list of operations: %v", err)
	}
	var out []string
	for i, o := range ops {
		path := fmt.Sprintf("patchesJson6902[%d]", i)
		if index != "" {
			if err := elementIndexPath(o, path); err != nil {
				return "", err
			}
		}
		c, err := w.jsonOp(o, path, index)
		if err != nil {
			return "", err
		}
		out = append(out, c)
	}
	return concat(out), nil
}

// elementIndexPlaceholder stands for {{elementIndex}} in a foreach
// entry's patchesJson6902 while it is read.
const elementIndexPlaceholder = "__admitc_elementIndex__"

var elementIndexVariable = regexp.MustCompile(`\{\{\s*elementIndex\s*\}\}`)

// ForEachJSON6902 translates a foreach entry's patchesJson6902 into the
// CEL list of JSONPatch of all its elements. Every path must hold
// {{elementIndex}} as one segment above the last (the elements then
// patch disjoint parts of the object); no other {{ }} variable is
// translated (Kyverno substitutes them in the text before it is parsed).
func ForEachJSON6902(doc string, e Elements) (string, error) {
	doc = elementIndexVariable.ReplaceAllString(doc, elementIndexPlaceholder)
	if strings.Contains(doc, "{{") || strings.Contains(doc, "$(") {
		return "", errorf("patchesJson6902", "{{ }} variables other than {{elementIndex}} in a path are substituted in the text before it is parsed; not translated")
	}
	w := &walker{scope: e.Scope}
	ops, err := w.jsonOps(doc, e.Index)
	if err != nil {
		return "", err
	}
	return e.each(ops), nil
}

// elementIndexPath requires the operation's path to hold the
// {{elementIndex}} segment once, above the last.
func elementIndexPath(o map[string]any, path string) error {
	ptr, _ := o["path"].(string)
	segs := strings.Split(ptr, "/")
	n := 0
	for i, s := range segs {
		if s == elementIndexPlaceholder {
			n++
			if i == len(segs)-1 {
				return errorf(path+".path", "{{elementIndex}} as the last segment adds or removes list elements, which moves the next elements' indexes; not translated")
			}
		} else if strings.Contains(s, elementIndexPlaceholder) {
			return errorf(path+".path", "{{elementIndex}} inside a segment is not translated")
		}
	}
	if n != 1 {
		return errorf(path+".path", "a foreach entry's patchesJson6902 is translated when every path holds {{elementIndex}} once (the elements then patch disjoint parts of the object)")
	}
	return nil
}

func (w *walker) jsonOp(o map[string]any, path, index string) (string, error) {
	kind, _ := o["op"].(string)
	ptr, _ := o["path"].(string)
	segs, err := segments(ptr, path+".path")
	if err != nil {
		return "", err
	}
	for i, s := range segs {
		if s == elementIndexPlaceholder {
			segs[i] = dynamicSegment + index
		}
	}
	p := segPointer(segs)
	switch kind {
	case "add":
		v, err := w.value(o["value"], path+".value")
		if err != nil {
			return "", err
		}
		return ensureAdd(segs, v, path)
	case "replace":
		v, err := w.value(o["value"], path+".value")
		if err != nil {
			return "", err
		}
		return op("replace", p, v), nil
	case "remove":
		return "(" + exists(segs) + " ? " + op("remove", p, "") + " : [])", nil
	}
	return "", errorf(path+".op", "the operation %q is not translated (add, replace and remove are)", kind)
}

// segments splits a JSON pointer; negative indexes (Kyverno's
// SupportNegativeIndices) and "-" above the last segment are refused.
func segments(ptr, path string) ([]string, error) {
	if !strings.HasPrefix(ptr, "/") {
		return nil, errorf(path, "the path %q is not a JSON pointer", ptr)
	}
	raw := strings.Split(ptr[1:], "/")
	var out []string
	for i, s := range raw {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		if strings.HasPrefix(s, "-") && s != "-" {
			return nil, errorf(path, "negative list indexes are not translated")
		}
		if s == "-" && i < len(raw)-1 {
			return nil, errorf(path, "%q above the last segment is not translated", "-")
		}
		out = append(out, s)
	}
	return out, nil
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// dynamicSegment prefixes a segment that is a CEL int expression.
const dynamicSegment = "\x00"

func dynamic(s string) (string, bool) { return strings.CutPrefix(s, dynamicSegment) }

func segPointer(segs []string) pointer {
	p := pointer{}
	for _, s := range segs {
		if i, ok := dynamic(s); ok {
			p = p.index(i)
			continue
		}
		p = p.key(s)
	}
	return p
}

// step is the CEL of the value under segment s of v.
func step(v, s string) string {
	if i, ok := dynamic(s); ok {
		return v + "[" + i + "]"
	}
	if isIndex(s) {
		return v + "[" + s + "]"
	}
	return v + "[" + quote(s) + "]"
}

// has is the CEL saying the container v holds segment s.
func has(v, s string) string {
	if i, ok := dynamic(s); ok {
		return "(type(" + v + ") == list && " + i + " < size(" + v + "))"
	}
	if isIndex(s) {
		return "(type(" + v + ") == list && " + s + " < size(" + v + "))"
	}
	return "(type(" + v + ") == map && " + quote(s) + " in " + v + ")"
}

// exists says the whole path is in the object.
func exists(segs []string) string {
	v, conds := "object", []string{}
	for _, s := range segs {
		conds = append(conds, has(v, s))
		v = step(v, s)
	}
	return strings.Join(conds, " && ")
}

// existsNotNull says the path is in the object and not null (json-patch
// creates the parents of an add where they are missing or null).
func existsNotNull(segs []string) string {
	v := "object"
	for _, s := range segs {
		v = step(v, s)
	}
	return exists(segs) + " && " + v + " != null"
}

// ensureAdd is add with EnsurePathExistsOnAdd: at the deepest part of the
// path the object has, the rest is added as new maps (lists, padded with
// nulls, where the next segment is an index or "-").
func ensureAdd(segs []string, v, path string) (string, error) {
	n := len(segs)
	out := ""
	for k := n - 1; k >= 0; k-- {
		// The object has segs[:k] and not segs[k] (unless k == n-1).
		val := v
		for j := n - 1; j > k; j-- {
			next := segs[j]
			i, dyn := dynamic(next)
			switch {
			case dyn:
				val = "lists.range(" + i + ").map(x, dyn(null)) + [dyn(" + val + ")]"
			case next == "-":
				val = "[" + val + "]"
			case isIndex(next):
				i, _ := strconv.Atoi(next)
				val = "[" + strings.Repeat("null, ", i) + val + "]"
			default:
				val = "{" + quote(next) + ": " + val + "}"
			}
		}
		o := op("add", segPointer(segs[:k+1]), val)
		if out == "" {
			out = o
			continue
		}
		out = "(" + existsNotNull(segs[:k+1]) + " ? " + out + " : " + o + ")"
	}
	if n == 0 {
		return "", errorf(path, "an add at the root is not translated")
	}
	return out, nil
}
