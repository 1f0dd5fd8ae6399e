// Package compiler turns admitc policy files (JSON or YAML) into an
// *ir.PolicySet plus diagnostics. A document with apiVersion and kind goes to
// the frontend of its API group: compiler/vap (admissionregistration.k8s.io)
// or compiler/gatekeeper (templates.gatekeeper.sh, constraints.gatekeeper.sh);
// bindings and constraints are attached to their policies once every file is
// read.
//
// Phases: parse (yaml.v3 nodes, so every value keeps its line and column and
// its field path), lower (each built-in type becomes CEL validations or CEL
// JSONPatch mutations with has() guards and all three container lists), and
// check (every expression is type-checked by the API server's CEL compiler,
// through internal/celenv). Errors are collected, sorted by position and
// rendered as file:line:col: path: message, with the source line and a caret
// for CEL errors.
//
// The kinds a policy names resolve through one internal/kubeschema.Resolver
// per compilation: built-in kinds, and the CRDs of Options.CRDs (ReadCRDs
// reads --crd).
//
// The compiler imports ir and internal packages only; never the runtime or a
// backend.
package compiler
