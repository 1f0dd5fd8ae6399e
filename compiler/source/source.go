package source

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// Doc is one document of a policy file.
type Doc struct {
	File string
	Root *yaml.Node
}

// Origin returns the origin of node n at field path path.
func (d *Doc) Origin(n *yaml.Node, path string) ir.Origin {
	return ir.Origin{File: d.File, Line: n.Line, Column: n.Column, Path: path}
}

// Field returns the string value of a top-level scalar field ("" if absent).
func (d *Doc) Field(name string) string {
	if n := d.NodeAt(name); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// NodeAt returns the node at a field path such as spec.validations[0].expression,
// or nil.
func (d *Doc) NodeAt(path string) *yaml.Node {
	n := d.Root
	for _, part := range splitPath(path) {
		if n == nil {
			return nil
		}
		if idx, err := strconv.Atoi(part); err == nil && n.Kind == yaml.SequenceNode {
			if idx < 0 || idx >= len(n.Content) {
				return nil
			}
			n = n.Content[idx]
			continue
		}
		n = mapValue(n, part)
	}
	return n
}

func splitPath(path string) []string {
	path = strings.ReplaceAll(path, "[", ".")
	path = strings.ReplaceAll(path, "]", "")
	if path == "" {
		return nil
	}
	return strings.Split(path, ".")
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Decode decodes the document into out, a pointer to the format's Go type,
// strictly: every field must exist in the type and hold the right kind of
// value; each mistake is a diagnostic at its place. what names the format
// in messages ("a ValidatingAdmissionPolicy").
func (d *Doc) Decode(out any, what string) diag.Diagnostics {
	return d.decodeNode(d.Root, "", out, what)
}

// DecodeAt decodes the node at field path path like Decode, for a part of a
// document whose type depends on a sibling field (a Gatekeeper template's
// code source depends on its engine); diagnostics carry full field paths.
func (d *Doc) DecodeAt(path string, out any, what string) diag.Diagnostics {
	n := d.NodeAt(path)
	if n == nil {
		return diag.Diagnostics{{Origin: d.Origin(d.Root, path), Message: "missing " + path}}
	}
	return d.decodeNode(n, path, out, what)
}

func (d *Doc) decodeNode(n *yaml.Node, path string, out any, what string) diag.Diagnostics {
	var ds diag.Diagnostics
	d.check(n, reflect.TypeOf(out).Elem(), path, what, &ds)
	if len(ds) > 0 {
		return ds
	}
	var generic any
	if err := n.Decode(&generic); err != nil {
		return diag.Diagnostics{{Origin: d.Origin(n, path), Message: err.Error()}}
	}
	data, err := json.Marshal(jsonable(generic))
	if err != nil {
		return diag.Diagnostics{{Origin: d.Origin(n, path), Message: err.Error()}}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return diag.Diagnostics{{Origin: d.Origin(n, path), Message: fmt.Sprintf("not %s: %v", what, err)}}
	}
	return nil
}

// jsonable turns YAML's map[string]any / map[any]any into JSON-encodable values.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

var (
	unmarshaler     = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// check walks node n against Go type t (with its json tags) and reports
// unknown fields and values of the wrong kind.
func (d *Doc) check(n *yaml.Node, t reflect.Type, path, what string, ds *diag.Diagnostics) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // its own format (times, quantities, raw extensions): json decides
	}
	bad := func(want string) {
		*ds = append(*ds, diag.Diagnostic{Origin: d.Origin(n, path), Message: fmt.Sprintf("must be %s, got %s", want, kindName(n))})
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad("an object")
			return
		}
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			p := join(path, k.Value)
			if !ok {
				*ds = append(*ds, diag.Diagnostic{Origin: d.Origin(k, p), Message: fmt.Sprintf("unknown field %q in %s", k.Value, describe(path, what))})
				continue
			}
			d.check(v, ft, p, what, ds)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("an object")
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			d.check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), what, ds)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return
		}
		if n.Kind != yaml.SequenceNode {
			bad("a list")
			return
		}
		for i, item := range n.Content {
			d.check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), what, ds)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			bad("a string")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			bad("true or false")
		}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			bad("an integer")
		}
	}
}

// jsonFields maps the JSON names of a struct's fields (inline ones
// flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range jsonFields(ft) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func describe(path, what string) string {
	if path == "" {
		return what
	}
	return path + " of " + what
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a " + strings.TrimPrefix(n.Tag, "!!")
}
