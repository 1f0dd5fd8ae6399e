// Package pattern translates Kyverno validate.pattern and validate.anyPattern
// overlays into CEL expressions that decide as Kyverno v1.19's engine
// (pkg/engine/validate.MatchPattern) does: the same outcome (pass, fail or
// skip) and the same failure path on every resource.
//
// The phases are: substitute the pattern's $( ) references, which name
// other values of the pattern itself (references.go, as Kyverno's
// substituteReferences does before matching), classify each pattern map key (anchor.go: conditional,
// global, equality, negation and existence anchors, and the order in which
// Kyverno visits them), translate maps and lists into outcome expressions
// (tree.go), and translate scalar patterns with their operators, ranges,
// durations, quantities and wildcards into CEL predicates (scalar.go).
// Every construct Kyverno's engine would decide differently from the CEL is
// refused with an *Error naming the pattern path; nothing is approximated
// silently. docs/kyverno-pattern-translation.md lists the rules.
//
// The package imports the CEL environment's conventions only as text: it must
// not import the Kyverno engine (its differential test does, behind the
// kyverno build tag), the IR, or a backend.
package pattern
