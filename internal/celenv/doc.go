// Package celenv builds the one CEL environment admitc uses, exactly as the
// Kubernetes API server builds it for ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy: the base environment set of k8s.io/apiserver, the
// Kubernetes CEL libraries, strict cost tracking, and the composited compiler
// of k8s.io/apiserver/pkg/admission/plugin/cel with lazy variables.
//
// The compiler uses it to type-check policies and the runtime uses it to build
// evaluators, so the two can never disagree about what an expression means.
// It imports the IR and upstream CEL/admission packages only.
package celenv
