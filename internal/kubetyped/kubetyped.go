package kubetyped

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Value is v (an unstructured value: maps, lists, strings, int64, float64,
// bools, null) as a CEL value with the equality of kube-apiserver 1.37's
// typed objects (k8s.io/apiserver v0.37.2 reflectSchemalessTypedStruct and
// reflectSchemalessTypedList):
//
//   - a map's or list's Equal with a value that is not a map (a list) is
//     "no such overload";
//   - a map compared with another map of the object compares deeply (Go's
//     DeepEqual), with any other map key by key, and the first key whose
//     values are not equal decides, an error included;
//   - a list compared with another list is false at the first element that
//     is not equal, an error included.
//
// Every map is treated as a struct (upstream wraps Go maps, such as labels,
// in a variant that is false instead of raising a nested error): the
// emulation raises at least every error the API server raises.
func Value(v any) ref.Val { return adapter{}.NativeToValue(v) }

// adapter wraps nested maps and lists as they are read.
type adapter struct{}

// NativeToValue implements types.Adapter.
func (adapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		return &object{Mapper: types.NewStringInterfaceMap(adapter{}, t), raw: t}
	case []any:
		return &list{Lister: types.NewDynamicList(adapter{}, t), raw: t}
	case ref.Val:
		return t
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// object is a map of a typed object.
type object struct {
	traits.Mapper
	raw map[string]any
}

// Equal implements ref.Val as reflectSchemalessTypedStruct.Equal does.
func (o *object) Equal(other ref.Val) ref.Val {
	if oo, ok := other.(*object); ok {
		return types.Bool(reflect.DeepEqual(o.raw, oo.raw))
	}
	om, ok := other.(traits.Mapper)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if o.Size() != om.Size() {
		return types.False
	}
	for it := o.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		v1, _ := o.Find(k)
		v2, found := om.Find(k)
		if !found {
			return types.False
		}
		if eq := v1.Equal(v2); eq != types.True {
			return eq
		}
	}
	return types.True
}

// ConvertToType keeps the wrapper for map and dyn conversions.
func (o *object) ConvertToType(t ref.Type) ref.Val {
	if t == types.MapType {
		return o
	}
	return o.Mapper.ConvertToType(t)
}

// list is a list of a typed object.
type list struct {
	traits.Lister
	raw []any
}

// Equal implements ref.Val as reflectSchemalessTypedList.Equal does.
func (l *list) Equal(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if l.Size() != ol.Size() {
		return types.False
	}
	for i := types.Int(0); i < l.Size().(types.Int); i++ {
		if l.Get(i).Equal(ol.Get(i)) != types.True {
			return types.False
		}
	}
	return types.True
}

// Contains implements traits.Container as reflectSchemalessTypedList does:
// each element's Equal decides, and an error counts as not equal.
func (l *list) Contains(v ref.Val) ref.Val {
	for i := types.Int(0); i < l.Size().(types.Int); i++ {
		if l.Get(i).Equal(v) == types.True {
			return types.True
		}
	}
	return types.False
}

// ConvertToType keeps the wrapper for list conversions.
func (l *list) ConvertToType(t ref.Type) ref.Val {
	if t == types.ListType {
		return l
	}
	return l.Lister.ConvertToType(t)
}
