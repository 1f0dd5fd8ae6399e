// Package mutate translates Kyverno ClusterPolicy mutate rules into CEL
// JSONPatch expressions that change an object as Kyverno v1.19's engine
// does (pkg/engine/mutate):
//
//   - patchStrategicMerge (overlay.go, walk.go, ops.go): the overlay is read
//     into a tree of plain keys, add-if-not-present anchors +(key),
//     conditional anchors (key) and global anchors <(key); walk.go decides
//     in CEL what Kyverno's preprocessing (strategicPreprocessing.go)
//     decides on the object (a condition not met drops the whole patch, or
//     one list element; a global anchor not met in any element drops the
//     whole patch; a list where the object holds something else is an
//     error), and ops.go writes the JSONPatch operations that give the
//     object kustomize's strategic merge of the preprocessed overlay: maps
//     merged key by key, the PodSpec lists containers, initContainers,
//     ephemeralContainers, volumes and imagePullSecrets merged by name.
//     Kyverno's preprocessing works on one copy of a list element's pattern
//     for every element of the object, so a +(key) inside a list element is
//     decided by the first element that reaches it; ops.go keeps that.
//   - patchesJson6902 (json6902.go): RFC 6902 operations with Kyverno's
//     options (a missing parent of add is created, a missing path of
//     remove is ignored).
//   - mutate.foreach entries (foreach.go): the patches above for each
//     element of the entry's list, where the operations computed on the
//     entry's object give the result of applying each element's patch to
//     the object the previous one returned.
//
// Whatever Kyverno would do differently from the CEL is refused with an
// *Error naming the overlay path; nothing is approximated silently.
//
// The package imports the conditions and pattern translations and the CEL
// conventions of internal/celenv only as text; it must not import the
// Kyverno engine (the differential test does, behind the kyverno build
// tag), the IR, or a backend.
package mutate
