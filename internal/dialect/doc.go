// Package dialect writes a policy's CEL, read in the dialect of the engine
// it was written for (ir.CELDialect), in the API server's dialect, so that
// a ValidatingAdmissionPolicy or MutatingAdmissionPolicy emitted from it
// decides as that engine does. What the CEL text does not show is made
// explicit: Kyverno's orValue macro (a value that is not optional is its
// own orValue), request.object and request.oldObject, which the API
// server's request lacks, and Kyverno's PolicyExceptions (none in admitc).
// What the API server has no equivalent for, a library function among
// them, is refused with its place and the reason.
//
// It imports ir and internal/celenv (the environments, parsing and type
// checking) only; the backends that emit admission policies call it.
package dialect
