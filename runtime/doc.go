// Package runtime evaluates an *ir.PolicySet on admission requests: the
// decision code that `admitc test`, `admitc compare` and the webhook server
// share, so an offline run decides exactly what the webhook decides.
//
// Evaluation is the API server's: policies are compiled with internal/celenv
// into the upstream validator and JSONPatch patchers of k8s.io/apiserver, and
// run in the API server's order (mutations, then validation of the mutated
// object) with its runtime CEL cost budget.
//
// The package keeps matching (match.go, binding.go), evaluation (engine.go),
// responses (result.go), manifest decoding (manifest.go) and what a decision
// reads from the cluster (state.go: ClusterState, namespaces and parameter
// objects, with StaticState for files) apart. The HTTP server lives in
// runtime/server and the caches that serve a ClusterState from the API
// server in runtime/cluster; both import this package, never the reverse.
// It must not import the compiler or any backend.
package runtime
