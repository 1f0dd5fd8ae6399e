package source

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// Refusal says who refuses a document and how to fix each of its errors,
// for FieldErrors.
type Refusal struct {
	// By names the refusing party and the object: "kube-apiserver refuses
	// this ValidatingAdmissionPolicyBinding".
	By string
	// Fixes gives advice by field path, indexes written [*]
	// ("spec.paramRef.parameterNotFoundAction"), or by the end of a path
	// after "*." ("*.matchExpressions[*].operator"); a path without advice
	// of its own gets its error type's (DefaultFix).
	Fixes map[string]string
}

// commonFixes is the advice for fields of the API types every format
// shares (label selectors).
var commonFixes = map[string]string{
	"*.matchExpressions[*].operator": "use In, NotIn, Exists or DoesNotExist",
}

// fix is the advice for e: its path's, the longest matching path end's
// (the refusal's, then commonFixes'), or its type's.
func (by Refusal) fix(e *field.Error) string {
	path := WildcardIndexes(e.Field)
	if f, ok := by.Fixes[path]; ok {
		return f
	}
	for _, fixes := range []map[string]string{by.Fixes, commonFixes} {
		for i := range len(path) {
			if f, ok := fixes["*"+path[i:]]; ok && path[i] == '.' {
				return f
			}
		}
	}
	return DefaultFix(e)
}

// FieldErrors turns the field errors of an upstream validation (the API
// server's, a CRD schema's, a policy engine's webhook) into diagnostics at
// the place of each field in the document: the field itself or, for a
// field the document lacks (a required one), the key of the nearest field
// above it that it holds. Each message is the upstream one, who refuses the
// document, and how to fix it.
func (d *Doc) FieldErrors(errs field.ErrorList, by Refusal) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, e := range errs {
		fix := by.fix(e)
		msg := fmt.Sprintf("%s (%s", errorBody(e), by.By)
		if fix != "" {
			msg += "; " + fix
		}
		ds = append(ds, diag.Diagnostic{Origin: d.OriginNear(e.Field), Message: msg + ")"})
	}
	return ds
}

// DefaultFix is the advice for an error type when a field has none of its
// own.
func DefaultFix(e *field.Error) string {
	switch e.Type {
	case field.ErrorTypeNotSupported:
		return "write one of the supported values, spelled as shown: case matters"
	case field.ErrorTypeDuplicate:
		return "remove the repeated entry"
	case field.ErrorTypeRequired:
		return "set it"
	case field.ErrorTypeTooLong, field.ErrorTypeTooMany:
		return "shorten it"
	case field.ErrorTypeTypeInvalid:
		return "write a value of the type shown"
	}
	return ""
}

// maxBadValueBytes bounds the value an error quotes: an error about a
// whole rule or list names the field, not its contents.
const maxBadValueBytes = 120

// errorBody is e's message without its field path, leaving out a bad value
// too long to read.
func errorBody(e *field.Error) string {
	switch reflect.ValueOf(e.BadValue).Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Pointer:
		if data, err := json.Marshal(e.BadValue); err != nil || len(data) > maxBadValueBytes {
			c := *e
			c.BadValue = field.OmitValueType{}
			return c.ErrorBody()
		}
	}
	return e.ErrorBody()
}

var indexes = regexp.MustCompile(`\[\d+\]`)

// WildcardIndexes writes every list index of a field path as [*].
func WildcardIndexes(path string) string {
	return indexes.ReplaceAllString(path, "[*]")
}

// OriginNear is the origin of the field at path or, when the document does
// not hold it, of the key of the nearest field above it that it holds (the
// document itself at worst); the origin's path is path either way. A field
// whose value is a block mapping or list is placed at its key.
func (d *Doc) OriginNear(path string) ir.Origin {
	n, key := d.Root, (*yaml.Node)(nil)
	for _, part := range splitPath(path) {
		next, nextKey := child(n, part)
		if next == nil {
			if key != nil {
				return d.Origin(key, path)
			}
			return d.Origin(n, path)
		}
		n, key = next, nextKey
	}
	if key != nil && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0 {
		return d.Origin(key, path)
	}
	return d.Origin(n, path)
}

// child is the node of one path part under n, and its key when n is a
// mapping.
func child(n *yaml.Node, part string) (*yaml.Node, *yaml.Node) {
	if n.Kind == yaml.SequenceNode {
		idx, err := strconv.Atoi(part)
		if err != nil || idx < 0 || idx >= len(n.Content) {
			return nil, nil
		}
		return n.Content[idx], nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == part {
			return n.Content[i+1], n.Content[i]
		}
	}
	return nil, nil
}

// Object is the document as the API server decodes a JSON request body:
// maps, lists, strings, booleans, int64 and float64.
func (d *Doc) Object() (map[string]any, error) {
	var generic any
	if err := d.Root.Decode(&generic); err != nil {
		return nil, err
	}
	data, err := json.Marshal(jsonable(generic))
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := k8sjson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("not an object")
	}
	return out, nil
}
