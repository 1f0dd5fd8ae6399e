// Package static emits static admission manifests (KEP-5793): the
// ValidatingAdmissionPolicies, MutatingAdmissionPolicies, their bindings and
// webhook configurations that kube-apiserver loads from disk, through the
// staticManifestsDir of each admission plugin in its
// --admission-control-config-file, before it serves a request. Such objects
// do not live in etcd, cannot be listed, changed or deleted through the API,
// and are evaluated even for requests on the API-based admission objects.
//
// The package lays out one directory per admission plugin, holding only the
// kinds that plugin's loader accepts, renames every object with the reserved
// ".static.k8s.io" suffix, and writes the AdmissionConfiguration that points
// each plugin at its directory. It builds no policy itself: the objects come
// from the vap, map and webhook backends, injected as backends.Backend
// values (internal/generate wires them), so the static output is the API
// output under other names. It refuses what kube-apiserver's loader refuses
// (parameters, service references, any API version but v1).
//
// It imports ir, backends, k8s.io/api and k8s.io/apiserver's configuration
// types only, never another backend or anything that reads files.
package static
