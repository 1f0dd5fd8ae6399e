// Package backends defines what every admitc backend implements: one
// generator per enforcement format (backends/vap, backends/map,
// backends/webhook, ...), each turning an *ir.PolicySet into typed
// Kubernetes objects. A backend package imports ir, this package and its
// target API only, never another backend or the compiler.
//
// A backend that cannot express an IR feature reports a diagnostic at the
// policy's origin; it never drops a rule silently.
package backends
