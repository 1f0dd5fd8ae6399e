// Package kubeschema knows what the kinds a policy matches are: the
// resources that serve them (Resolver.Resources: built-in kinds from
// internal/apiresources, custom resources from their CRD), and their
// schema as the API server knows it: built-in kinds from the Kubernetes
// release's generated OpenAPI definitions
// (k8s.io/kubernetes/pkg/generated/openapi, resolved by k8s.io/apiserver's
// DefinitionsSchemaResolver, as kube-controller-manager's admission policy
// type checker resolves them), custom resources from their CRD's schema
// when given. A translation asks
// it what type a field has and whether every object the API server hands
// to admission has it, so it can leave out the checks the schema makes
// moot; the runtime asks it whether an object offline is shaped as the
// schema says before judging it with such a translation (Conforms).
//
// It imports Kubernetes' API machinery and internal/apiresources only,
// never a frontend or backend.
package kubeschema

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/admitc/admitc/internal/apiresources"
)

// Shape is what a schema node holds.
type Shape int

const (
	// Unknown is a value whose type the schema does not fix
	// (x-kubernetes-preserve-unknown-fields, or no schema at all).
	Unknown Shape = iota
	// Object has named properties.
	Object
	// Map has string keys and values of one schema (additionalProperties).
	Map
	// List has items of one schema.
	List
	// String, Integer, Number and Boolean are scalars.
	String
	Integer
	Number
	Boolean
	// IntOrString is x-kubernetes-int-or-string: an int or a string.
	IntOrString
)

func (s Shape) String() string {
	return [...]string{"unknown", "object", "map", "list", "string", "integer", "number", "boolean", "int-or-string"}[s]
}

// Node is a place in the schema of one kind or, when a policy matches
// several kinds, of all of them at once (Intersect): what it says holds for
// every one of them.
type Node struct {
	parts []part
}

// part is a place in one kind's schema.
type part struct {
	s *spec.Schema
	// goType is the Go type a built-in kind's value decodes into (nil for
	// custom resources): a field of a struct type that is not a pointer is
	// in every object the API server serialises.
	goType reflect.Type
}

// Intersect is the place of the nodes of several kinds taken together:
// its shape is theirs when they agree (else Unknown), a field is present
// when every kind has it there.
func Intersect(nodes ...Node) Node {
	var out Node
	for _, n := range nodes {
		out.parts = append(out.parts, n.parts...)
	}
	return out
}

// Shape says what the node holds (Unknown when the kinds disagree).
func (n Node) Shape() Shape {
	if len(n.parts) == 0 {
		return Unknown
	}
	out := n.parts[0].shape()
	for _, p := range n.parts[1:] {
		if p.shape() != out {
			return Unknown
		}
	}
	return out
}

func (p part) shape() Shape {
	s := p.s
	switch {
	case s == nil, s.Nullable:
		// A nullable field of a custom resource may hold null.
		return Unknown
	case isIntOrString(s):
		return IntOrString
	}
	switch typeOf(s) {
	case "object":
		switch {
		case len(s.Properties) > 0:
			return Object
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			return Map
		}
		return Unknown
	case "array":
		if s.Items != nil && s.Items.Schema != nil {
			return List
		}
		return Unknown
	case "string":
		return String
	case "integer":
		return Integer
	case "number":
		return Number
	case "boolean":
		return Boolean
	}
	return Unknown
}

// typeOf is a schema's type; a union the OpenAPI v3 definitions write as
// oneOf (resource.Quantity: a string or a number) takes the type of its
// OpenAPI v2 form (a quantity is serialised as a string).
func typeOf(s *spec.Schema) string {
	if len(s.Type) == 1 {
		return s.Type[0]
	}
	switch v2 := s.Extensions["x-kubernetes-v2-schema"].(type) {
	case spec.Schema:
		return typeOf(&v2)
	case *spec.Schema:
		return typeOf(v2)
	}
	return ""
}

func isIntOrString(s *spec.Schema) bool {
	return extension(s, "x-kubernetes-int-or-string") || s.Format == "int-or-string"
}

// Field is the property name of an object node (of an Unknown node: an
// Unknown node); ok is false when no kind has it (the API server drops a
// field its schema does not have). A field some kinds have and others not
// is Unknown, and so is one a kind's schema leaves open:
// x-kubernetes-preserve-unknown-fields keeps fields it does not name, and
// an embedded resource has apiVersion, kind and metadata whether it names
// them or not.
func (n Node) Field(name string) (Node, bool) {
	switch n.Shape() {
	case Object:
	case Unknown:
		return Node{parts: []part{{}}}, true
	default:
		return Node{}, false
	}
	var out Node
	found, open := 0, 0
	for _, p := range n.parts {
		if c, ok := p.s.Properties[name]; ok {
			out.parts = append(out.parts, part{s: &c, goType: fieldType(p.goType, name)})
			found++
		} else if p.keeps(name) {
			open++
		}
	}
	switch {
	case found == 0 && open == 0:
		return Node{}, false
	case found < len(n.parts):
		return Node{parts: []part{{}}}, true
	}
	return out, true
}

// Fields are the properties an object of this node may hold, sorted (of
// every kind taken together); false when it is not an object or may hold
// properties its schema does not name.
func (n Node) Fields() ([]string, bool) {
	if n.Shape() != Object {
		return nil, false
	}
	set := map[string]bool{}
	for _, p := range n.parts {
		if extension(p.s, "x-kubernetes-preserve-unknown-fields") || extension(p.s, "x-kubernetes-embedded-resource") {
			return nil, false
		}
		for name := range p.s.Properties {
			set[name] = true
		}
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	slices.Sort(out)
	return out, true
}

// keeps says whether an object of this schema may hold the property name
// that the schema does not list.
func (p part) keeps(name string) bool {
	if extension(p.s, "x-kubernetes-preserve-unknown-fields") {
		return true
	}
	return extension(p.s, "x-kubernetes-embedded-resource") && (name == "apiVersion" || name == "kind" || name == "metadata")
}

// extension is a boolean vendor extension of s.
func extension(s *spec.Schema, name string) bool {
	v, ok := s.Extensions[name].(bool)
	return ok && v
}

// AlwaysPresent says whether every object the API server serialises has
// the property name, for every kind: a required property, or a field of a
// built-in kind whose Go type is a struct, not a pointer (it is written
// even when empty: a Pod always has spec, a container always has
// resources).
func (n Node) AlwaysPresent(name string) bool {
	if n.Shape() != Object {
		return false
	}
	for _, p := range n.parts {
		if !p.alwaysPresent(name) {
			return false
		}
	}
	return true
}

func (p part) alwaysPresent(name string) bool {
	for _, r := range p.s.Required {
		if r == name {
			return true
		}
	}
	if p.goType != nil && slices.Contains(validationRequired[p.goType], name) {
		return true
	}
	t := fieldType(p.goType, name)
	return t != nil && t.Kind() == reflect.Struct
}

// Enum is the values a string node may hold, when its schema lists them
// for every kind (the API server's validation of the built-in kinds
// refuses any other, e.g. a Service's type or a container's
// imagePullPolicy); nil when it does not.
func (n Node) Enum() []string {
	if n.Shape() != String {
		return nil
	}
	var out []string
	for i, p := range n.parts {
		if len(p.s.Enum) == 0 {
			return nil
		}
		var vals []string
		for _, e := range p.s.Enum {
			v, ok := e.(string)
			if !ok {
				return nil
			}
			if i == 0 || slices.Contains(out, v) {
				vals = append(vals, v)
			}
		}
		out = vals
	}
	return out
}

// validationRequired are the fields the API server's validation of the
// built-in kinds requires to be set (non-empty, so written) though their
// schema leaves them optional: every container has an image
// (validateContainerCommon in pkg/apis/core/validation, for containers,
// init containers and ephemeral containers, in pods and pod templates),
// and every ReplicationController a pod template
// (ValidatePodTemplateSpecForRC).
var validationRequired = map[reflect.Type][]string{
	reflect.TypeOf(corev1.Container{}):                 {"image"},
	reflect.TypeOf(corev1.EphemeralContainer{}):        {"image"},
	reflect.TypeOf(corev1.ReplicationControllerSpec{}): {"template"},
}

// FormatDNSLabel is the format of a field the API server's validation
// requires to be a DNS-1123 label.
const FormatDNSLabel = "dns-label"

// dnsLabels are the fields of built-in kinds whose values the API
// server's validation requires to be DNS-1123 labels (ValidatePodSpec:
// a container's name, a volume's, and a volume mount's, which must name
// one of the pod's volumes).
var dnsLabels = map[reflect.Type][]string{
	reflect.TypeOf(corev1.Container{}):          {"name"},
	reflect.TypeOf(corev1.EphemeralContainer{}): {"name"},
	reflect.TypeOf(corev1.Volume{}):             {"name"},
	reflect.TypeOf(corev1.VolumeMount{}):        {"name"},
}

// FormatLabelValue is the format of a label's value, as the API server's
// validation requires it (ASCII letters, digits, '-', '_' and '.').
const FormatLabelValue = "label-value"

// labelMaps are the maps of built-in kinds whose values the API server
// validates as label values (ValidateLabels).
var labelMaps = map[reflect.Type][]string{
	reflect.TypeOf(metav1.ObjectMeta{}): {"labels"},
}

// ValuesFormat is what the API server's validation requires of the
// values of the map field name of an object node in every kind
// (FormatLabelValue), or "".
func (n Node) ValuesFormat(name string) string {
	if n.Shape() != Object || !n.everyGoType(func(t reflect.Type) bool { return slices.Contains(labelMaps[t], name) }) {
		return ""
	}
	return FormatLabelValue
}

// FieldFormat is what the API server's validation requires of the string
// field name of an object node in every kind (FormatDNSLabel), or "".
func (n Node) FieldFormat(name string) string {
	if n.Shape() != Object || !n.everyGoType(func(t reflect.Type) bool { return slices.Contains(dnsLabels[t], name) }) {
		return ""
	}
	return FormatDNSLabel
}

// everyGoType says the node is a built-in kind's in every kind, and its
// Go type (a pointer's element) is one that ok accepts.
func (n Node) everyGoType(ok func(t reflect.Type) bool) bool {
	if len(n.parts) == 0 {
		return false
	}
	for _, p := range n.parts {
		t := p.goType
		if t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t == nil || !ok(t) {
			return false
		}
	}
	return true
}

// quantityType is the Go type of a resource quantity.
var quantityType = reflect.TypeOf(resource.Quantity{})

// Quantity says the node holds a resource.Quantity in every kind (a
// built-in kind's field of that Go type): the API server parses it when it
// decodes the object, so admission sees a string that is a quantity, in
// its canonical form. A custom resource's field is never known to be one.
func (n Node) Quantity() bool {
	return n.everyGoType(func(t reflect.Type) bool { return t == quantityType })
}

// Items is a list node's item schema.
func (n Node) Items() Node {
	if n.Shape() != List {
		return Node{}
	}
	var out Node
	for _, p := range n.parts {
		out.parts = append(out.parts, part{s: p.s.Items.Schema, goType: elem(p.goType)})
	}
	return out
}

// Values is a map node's value schema.
func (n Node) Values() Node {
	if n.Shape() != Map {
		return Node{}
	}
	var out Node
	for _, p := range n.parts {
		out.parts = append(out.parts, part{s: p.s.AdditionalProperties.Schema, goType: elem(p.goType)})
	}
	return out
}

// fieldType is the Go type of the field of struct type t whose JSON name
// is name (fields inlined with ",inline" included), or nil.
func fieldType(t reflect.Type, name string) reflect.Type {
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		jsonName, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "inline") || f.Anonymous && jsonName == "" {
			if ft := fieldType(f.Type, name); ft != nil {
				return ft
			}
			continue
		}
		if jsonName == name {
			return f.Type
		}
	}
	return nil
}

// elem is the element type of a slice or map type, through pointers.
func elem(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		e := t.Elem()
		if e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		return e
	}
	return nil
}

// Resolver gives what a kind is: the resources that serve it and its
// schema, for built-in kinds from the release (internal/apiresources and
// the OpenAPI definitions), for custom resources from the CRDs given. It is
// immutable once built, and safe to share.
type Resolver struct {
	crds map[schema.GroupVersionKind]*spec.Schema
	// served are the CRDs' resources, one per served version, in the
	// order the CRDs and their versions were given.
	served []apiresources.Resource
}

// The built-in kinds' schemas, resolved from the OpenAPI definitions when
// first asked for.
var (
	builtinMu    sync.Mutex
	builtin      *resolver.DefinitionsSchemaResolver
	builtinCache map[schema.GroupVersionKind]*spec.Schema
)

// Forget drops the built-in kinds' schemas resolved so far and the
// definitions they were resolved from (about 10 MB): a long run that
// compiled its policies and compiles no more until a reload (audit, serve)
// need not keep them. They are resolved again when asked for; a Resolver's
// CRD schemas stay.
func Forget() {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	builtin, builtinCache = nil, nil
}

// NewResolver resolves built-in kinds and the kinds of crds.
func NewResolver(crds ...*apiextensionsv1.CustomResourceDefinition) (*Resolver, error) {
	r := &Resolver{crds: map[schema.GroupVersionKind]*spec.Schema{}}
	for _, crd := range crds {
		if err := r.addCRD(crd); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Builtins resolves the built-in kinds only.
func Builtins() *Resolver {
	return &Resolver{crds: map[schema.GroupVersionKind]*spec.Schema{}}
}

// Resource is a REST resource that serves a kind.
type Resource struct {
	apiresources.Resource
	// Custom says a CRD given defines it.
	Custom bool
}

// Resources are the resources that serve kind in group ("*": any group):
// a built-in kind's in each group's preferred version (matchPolicy
// Equivalent covers the others), a CRD's in each version it serves, in the
// CRD's order. None means the kind is neither built in nor defined by a
// CRD given.
func (r *Resolver) Resources(group, kind string) []Resource {
	var out []Resource
	for _, res := range apiresources.ByKind(group, kind) {
		out = append(out, Resource{Resource: res})
	}
	for _, res := range r.served {
		if res.Kind == kind && (group == "*" || res.Group == group) {
			out = append(out, Resource{Resource: res, Custom: true})
		}
	}
	return out
}

// Schema is the root node of gvk's schema; ok is false for a kind neither
// built in nor given as a CRD.
func (r *Resolver) Schema(gvk schema.GroupVersionKind) (Node, bool) {
	if s, ok := r.crds[gvk]; ok {
		return Node{parts: []part{{s: s}}}, true
	}
	s, err := builtinSchema(gvk)
	if err != nil {
		return Node{}, false
	}
	var t reflect.Type
	if obj, err := scheme.Scheme.New(gvk); err == nil {
		t = reflect.TypeOf(obj).Elem()
	}
	return Node{parts: []part{{s: s, goType: t}}}, true
}

func builtinSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	if builtin == nil {
		builtin = resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, scheme.Scheme)
		builtinCache = map[schema.GroupVersionKind]*spec.Schema{}
	}
	if s, ok := builtinCache[gvk]; ok {
		return s, nil
	}
	s, err := builtin.ResolveSchema(gvk)
	if err != nil {
		return nil, err
	}
	builtinCache[gvk] = s
	return s, nil
}

// Only is an object node with only the named fields of n (each kind's
// schema copied, its other properties dropped): what a reader that keeps
// part of an object sees, such as Kyverno's configMap loader, which keeps
// a ConfigMap's data and metadata. A node that is not an object is
// returned as it is.
func (n Node) Only(names ...string) Node {
	if n.Shape() != Object {
		return n
	}
	out := Node{parts: make([]part, len(n.parts))}
	for i, p := range n.parts {
		s := *p.s
		s.Properties = map[string]spec.Schema{}
		for _, name := range names {
			if c, ok := p.s.Properties[name]; ok {
				s.Properties[name] = c
			}
		}
		s.Required = slices.DeleteFunc(slices.Clone(p.s.Required), func(r string) bool { return !slices.Contains(names, r) })
		out.parts[i] = part{s: &s, goType: p.goType}
	}
	return out
}
