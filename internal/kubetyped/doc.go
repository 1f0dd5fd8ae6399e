// Package kubetyped presents an unstructured object to CEL as kube-apiserver
// 1.37 presents a built-in (typed) object to admission policies, so that
// admitc's tests can evaluate emitted CEL as that API server does while
// admitc itself embeds the 1.36 library.
//
// Up to k8s.io/apiserver v0.36, the plugin converts the object to
// unstructured and CEL sees cel-go's own maps and lists, whose equality with
// a value of another kind is false (CEL's heterogeneous equality). From
// v0.37 (pkg/admission/conversion.go LazyObject.CELValue with
// UseSchemalessTypeRef, pkg/cel/common/valuesschemalesstyped.go) a typed
// object is wrapped lazily by reflection, and those wrappers answer
// equality with a value of another kind with "no such overload": `x ==
// false` where x is a map or a list is an evaluation error, while `false ==
// x` is false (the left operand's Equal decides).
//
// It imports cel-go only. It is a test aid: the webhook and the offline
// commands evaluate as the embedded library does.
package kubetyped
