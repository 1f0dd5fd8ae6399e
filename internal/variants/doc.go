// Package variants derives mechanical variants of a Kubernetes object, for
// differential tests that run two evaluators on the same inputs (Kyverno's
// engine against admitc's runtime, or two runtime paths) and need inputs
// that the hand-written fixtures do not cover.
//
// The phases are: list every path of the object in a fixed order (path.go);
// build the pool of single changes at those paths (mutations.go: fields
// removed, set to null or to another JSON type, lists emptied or extended),
// in the pod specs of a Pod or a pod controller (podspec.go: an extra
// container copied from an existing one and changed to break the usual
// rules, host namespaces, hostPath volumes, unsafe sysctls), and at the
// boundaries of the caller's interesting scalars (boundary.go); then pick
// the variants from the pool with a seeded generator, a round over the
// kinds of change at a time, and combine changes when the pool runs short
// (variants.go). The same object, options and seed give the same variants
// in the same order.
//
// Variants keep the object's apiVersion, kind, metadata.name and
// metadata.namespace, and hold only JSON values (string, int64, float64,
// bool, nil, []any, map[string]any), so each can be an
// unstructured.Unstructured. The package imports the standard library only.
package variants
