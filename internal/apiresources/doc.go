// Package apiresources is the list of REST resources a kube-apiserver
// release serves (group, version, resource, kind, scope, subresources),
// generated from the release's own discovery documents
// (k8s.io/kubernetes api/discovery, the version go.mod requires) by
// `go generate ./internal/apiresources`. Frontends use it to resolve a kind
// a policy names (Kyverno's `kinds: [Pod]`, a resource filter's `Event`) to
// the resources an admission policy's rules must name; runtime/server to
// refuse a review whose request.kind is not its request.resource's kind.
//
// It imports nothing of admitc's; it is data and lookups.
package apiresources

//go:generate go run ./gen -o zz_generated.go
