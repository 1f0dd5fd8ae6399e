// Package staticdir checks a tree of static admission manifests (written by
// backends/static) the way kube-apiserver loads it at startup: the
// AdmissionConfiguration decoded strictly, each staticManifestsDir absolute
// and a directory, and each plugin directory read by kube-apiserver's own
// loaders (k8s.io/kubernetes/pkg/admission/plugin/.../manifest/loader), so
// a tree admitc accepts is a tree kube-apiserver starts with, and a tree it
// refuses is refused with kube-apiserver's message.
//
// It belongs to the application (internal/cli calls it for compile --out
// and --check); it reads files, so no backend may import it.
package staticdir
