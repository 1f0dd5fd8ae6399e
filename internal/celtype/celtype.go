// Package celtype simplifies CEL written for values of any type (admitc's
// exact dynamic translations of Kyverno rules, which test a value's type
// before each use) for the values a policy actually sees: the object of a
// kind whose schema is known, the admission request, literals. A test of a
// type the schema fixes is folded, the branches it rules out disappear, a
// field every object has needs no presence test, a value bound to a
// variable only to be used once is written where it is used, and
// string(x) of a string is x. What it relies on is recorded as the reads
// of the schema (ir.SchemaRead), which the runtime checks an object
// against before trusting the result offline.
//
// It imports cel-go, internal/celbuild, internal/kubeschema and ir.
package celtype

import (
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// Kind is a CEL value's type, as far as the simplifier knows it.
type Kind int

const (
	// Dyn is any type.
	Dyn Kind = iota
	Null
	Bool
	Int
	Uint
	Double
	String
	Bytes
	List
	Map
	// Object is a map of named fields (a schema object).
	Object
)

// celTypeNames are the CEL type identifiers of the kinds.
var celTypeNames = map[string]Kind{"bool": Bool, "int": Int, "uint": Uint, "double": Double, "string": String,
	"bytes": Bytes, "list": List, "map": Map, "null_type": Null}

// Type is what the simplifier knows of a value.
type Type struct {
	Kind Kind
	// Nullable says the value may also be null.
	Nullable bool
	// Node is the value's place in its kind's schema (Object, Map and List
	// values of the object), and Path its schema path for the reads.
	Node   kubeschema.Node
	Path   string
	Schema bool
	// Elem is the element type of a List (or value type of a Map) not from
	// the schema (a literal list).
	Elem *Type
	// Rooted says the value comes from a root the API server declares as
	// dyn (object, oldObject): the type checker sees dyn, so a dyn() around
	// it changes nothing.
	Rooted bool
	// Facts are the reads of the schema the type rests on (several when
	// the value comes from several places, a conditional's branches).
	Facts []ir.SchemaRead
}

// Unknown is a value of any type.
var Unknown = Type{Kind: Dyn}

// FromSchema is the type of a value at a place of the schema.
func FromSchema(n kubeschema.Node, path string) Type {
	t := Type{Node: n, Path: path, Schema: true, Rooted: true}
	if path != "" {
		t.Facts = []ir.SchemaRead{{Path: path, Shape: n.Shape().String()}}
	}
	switch n.Shape() {
	case kubeschema.Object:
		t.Kind = Object
	case kubeschema.Map:
		t.Kind = Map
	case kubeschema.List:
		t.Kind = List
	case kubeschema.String:
		t.Kind = String
	case kubeschema.Integer:
		t.Kind = Int
	case kubeschema.Boolean:
		t.Kind = Bool
	default:
		t.Kind = Dyn
	}
	return t
}

// concrete says the kind is known (not Dyn, not nullable).
func (t Type) concrete() bool { return t.Kind != Dyn && !t.Nullable }

// isMap says values of the kind are CEL maps.
func (k Kind) isMap() bool { return k == Map || k == Object }

// elem is the type of an element of a list, or a value of a map.
func (t Type) elem() Type {
	switch {
	case t.Elem != nil:
		return *t.Elem
	case t.Schema && t.Kind == List:
		return FromSchema(t.Node.Items(), t.Path+"[]")
	case t.Schema && t.Kind == Map:
		return FromSchema(t.Node.Values(), t.Path+"[]")
	}
	return Type{Kind: Dyn, Rooted: t.Rooted}
}

// keyType is the type of an iteration over the value: a list's element,
// a map's key.
func (t Type) keyType() Type {
	if t.Kind.isMap() {
		return Type{Kind: String}
	}
	if t.Kind == List {
		return t.elem()
	}
	return Type{Kind: Dyn, Rooted: t.Rooted}
}

// Env is what the simplifier knows of an expression's names.
type Env struct {
	// Vars are the types of identifiers (object, oldObject, request) and
	// of selections of them ("variables.x", "request.operation").
	Vars map[string]Type
	// Operations, when set, are the only operations the policy is asked
	// about: request.operation == "DELETE" folds when DELETE is not one.
	Operations []ir.Operation
}

// schemaShape names a kind for a read.
func (t Type) shape() string {
	if t.Schema {
		return t.Node.Shape().String()
	}
	return "unknown"
}
