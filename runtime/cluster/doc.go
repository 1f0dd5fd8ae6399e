// Package cluster is the webhook's view of its cluster: client-go informers
// for Namespaces and for every parameter kind the served policies name
// (dynamic informers, the kinds resolved through discovery), read by the
// runtime through runtime.ClusterState, as the API server's own admission
// policy plugins read theirs.
//
// It owns the informers' lifecycle (a kind that is not served yet is
// looked up again; a kind no policy names any more is dropped), readiness
// (Synced), the API server's reachability (the caches keep the last synced
// state when it goes away, and decisions go on from them) and the metrics
// and log lines that say so. It also finds the connection: a kubeconfig
// file, or the pod's in-cluster configuration.
//
// It imports runtime, ir and client-go; it must not import runtime/server,
// the compiler or any backend.
package cluster
