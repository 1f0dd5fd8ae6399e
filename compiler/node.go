package compiler

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// field is a YAML node with the origin it was read from.
type field struct {
	node   *yaml.Node
	origin ir.Origin
}

// reader walks yaml.v3 nodes of one file and collects diagnostics.
type reader struct {
	file  string
	lines []string
	diags Diagnostics
	// exprNodes maps the field path of every CEL expression to its node.
	exprNodes map[string]field
	// brokenTemplateKinds are the constraint kinds of Gatekeeper templates
	// that did not read, so their constraints are not reported as orphans.
	brokenTemplateKinds []string
	// kinds resolves the kinds a policy names (Options.CRDs and the
	// built-in kinds).
	kinds *kubeschema.Resolver
	// contextValues are Options.ContextValues.
	contextValues kyverno.ContextValues
	// kyvernoRoles are Options.KyvernoRoles.
	kyvernoRoles *kyverno.UserRoles
}

func (r *reader) origin(n *yaml.Node, path string) ir.Origin {
	return ir.Origin{File: r.file, Line: n.Line, Column: n.Column, Path: path}
}

func (r *reader) errorf(o ir.Origin, format string, args ...any) {
	r.diags = append(r.diags, Diagnostic{Origin: o, Message: fmt.Sprintf(format, args...)})
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "a " + strings.TrimPrefix(n.Tag, "!!")
	}
	return "an unsupported value"
}

// object is a YAML mapping whose fields are read one by one; fields never read
// are reported as unknown by done.
type object struct {
	r      *reader
	f      field
	fields map[string]field
	order  []string
	read   map[string]bool
}

func (r *reader) object(f field, what string) *object {
	o := &object{r: r, f: f, fields: map[string]field{}, read: map[string]bool{}}
	if f.node.Kind != yaml.MappingNode {
		r.errorf(f.origin, "%s must be an object, got %s", what, kindName(f.node))
		return o
	}
	for i := 0; i+1 < len(f.node.Content); i += 2 {
		k, v := f.node.Content[i], f.node.Content[i+1]
		path := joinPath(f.origin.Path, k.Value)
		if _, dup := o.fields[k.Value]; dup {
			r.errorf(r.origin(k, path), "field %q is set twice", k.Value)
			continue
		}
		o.fields[k.Value] = field{node: v, origin: r.origin(v, path)}
		o.order = append(o.order, k.Value)
	}
	return o
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// get returns the named field, marking it read.
func (o *object) get(name string) (field, bool) {
	o.read[name] = true
	f, ok := o.fields[name]
	if ok && f.node.Kind == yaml.ScalarNode && f.node.Tag == "!!null" {
		return f, false
	}
	return f, ok
}

// keyOrigin returns the position of a field's key (for "missing" errors, the object's).
func (o *object) missing(name, hint string) {
	msg := fmt.Sprintf("missing required field %q", name)
	if hint != "" {
		msg += ": " + hint
	}
	o.r.errorf(ir.Origin{File: o.f.origin.File, Line: o.f.node.Line, Column: o.f.node.Column, Path: joinPath(o.f.origin.Path, name)}, "%s", msg)
}

func (o *object) str(name string, required bool, hint string) (string, ir.Origin) {
	f, ok := o.get(name)
	if !ok {
		if required {
			o.missing(name, hint)
		}
		return "", f.origin
	}
	if f.node.Kind != yaml.ScalarNode || f.node.Tag == "!!map" || f.node.Tag == "!!seq" {
		o.r.errorf(f.origin, "must be a string, got %s", kindName(f.node))
		return "", f.origin
	}
	return f.node.Value, f.origin
}

func (o *object) strList(name string) ([]string, []ir.Origin, bool) {
	f, ok := o.get(name)
	if !ok {
		return nil, nil, false
	}
	if f.node.Kind != yaml.SequenceNode {
		o.r.errorf(f.origin, "must be a list of strings, got %s", kindName(f.node))
		return nil, nil, true
	}
	var out []string
	var origins []ir.Origin
	for i, item := range f.node.Content {
		orig := o.r.origin(item, fmt.Sprintf("%s[%d]", f.origin.Path, i))
		if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
			o.r.errorf(orig, "must be a string, got %s", kindName(item))
			continue
		}
		out = append(out, item.Value)
		origins = append(origins, orig)
	}
	return out, origins, true
}

func (o *object) strMap(name string) (map[string]string, []string, bool) {
	f, ok := o.get(name)
	if !ok {
		return nil, nil, false
	}
	if f.node.Kind != yaml.MappingNode {
		o.r.errorf(f.origin, "must be an object of strings, got %s", kindName(f.node))
		return nil, nil, true
	}
	out := map[string]string{}
	var keys []string
	for i := 0; i+1 < len(f.node.Content); i += 2 {
		k, v := f.node.Content[i], f.node.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			o.r.errorf(o.r.origin(v, joinPath(f.origin.Path, k.Value)), "must be a string, got %s", kindName(v))
			continue
		}
		if _, dup := out[k.Value]; dup {
			o.r.errorf(o.r.origin(k, joinPath(f.origin.Path, k.Value)), "key %q is set twice", k.Value)
			continue
		}
		out[k.Value] = v.Value
		keys = append(keys, k.Value)
	}
	sort.Strings(keys)
	return out, keys, true
}

func (o *object) list(name string) ([]field, bool) {
	f, ok := o.get(name)
	if !ok {
		return nil, false
	}
	if f.node.Kind != yaml.SequenceNode {
		o.r.errorf(f.origin, "must be a list, got %s", kindName(f.node))
		return nil, true
	}
	out := make([]field, len(f.node.Content))
	for i, item := range f.node.Content {
		out[i] = field{node: item, origin: o.r.origin(item, fmt.Sprintf("%s[%d]", f.origin.Path, i))}
	}
	return out, true
}

// done reports every field that was never read as unknown.
func (o *object) done(what string) {
	var known []string
	for k := range o.read {
		known = append(known, k)
	}
	sort.Strings(known)
	for _, name := range o.order {
		if o.read[name] {
			continue
		}
		f := o.fields[name]
		key := o.keyNode(name)
		orig := f.origin
		if key != nil {
			orig = o.r.origin(key, f.origin.Path)
		}
		o.r.errorf(orig, "unknown field %q in %s (known fields: %s)", name, what, strings.Join(known, ", "))
	}
}

func (o *object) keyNode(name string) *yaml.Node {
	for i := 0; i+1 < len(o.f.node.Content); i += 2 {
		if o.f.node.Content[i].Value == name {
			return o.f.node.Content[i]
		}
	}
	return nil
}
