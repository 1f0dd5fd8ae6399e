// Package cluster is the webhook's view of its cluster: caches filled by
// client-go reflectors, one for Namespaces and one per place a paramRef of
// the served policies reads parameter objects from (its namespace, and its
// name or label selector: nothing else is listed, watched or kept; the
// kinds resolved through discovery), read by the runtime through
// runtime.ClusterState, as the API server's own admission policy plugins
// read their informers.
//
// It owns the caches' lifecycle (a kind that is not served yet is looked
// up again; a paramRef no policy has any more is dropped), readiness
// (Synced: listed once and, while the API server answers, listed again
// since any break), the API server's reachability (the caches keep the
// last synced state when it goes away, and decisions go on from them; when
// it answers again, broken caches list again at once) and the metrics and
// log lines that say so. It also finds the connection: a kubeconfig file,
// or the pod's in-cluster configuration.
//
// It imports runtime, ir and client-go; it must not import runtime/server,
// the compiler or any backend.
package cluster
