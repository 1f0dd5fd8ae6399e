// Package defaults applies the Kubernetes API server's own defaulting to a
// manifest before it is judged offline, so `admitc test`, `admitc cel` and
// `admitc compare` see the object admission sees in a cluster: a Service
// without a type is a ClusterIP Service, a volume without a source is an
// emptyDir, a container of an image tagged :latest pulls Always.
//
// It owns one runtime.Scheme holding the built-in API groups of
// k8s.io/kubernetes (the release admitc's k8s.io modules come from) with their
// generated defaulters and conversions. A built-in object is decoded into its
// typed versioned struct, defaulted with those defaulters, converted to the
// internal version and back (as the API server converts it for admission),
// and returned as unstructured again. Kinds the scheme does not know (custom
// resources) pass through unchanged.
//
// Only the scheme's defaulters run. The API server also runs registry
// strategy code and admission plugins before policies see the object
// (PrepareForCreate, clusterIP allocation, the ServiceAccount plugin, ...);
// those are not reproduced here. See Apply.
//
// It imports k8s.io/kubernetes API packages, k8s.io/apimachinery and
// admitc's runtime (for runtime.Manifest) only; it must not import
// compiler, backends or any other internal package, and the webhook server
// (runtime/server) must not import it: the API server has already defaulted
// what it sends.
package defaults
