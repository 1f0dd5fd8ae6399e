// Package typed translates Kyverno patterns, conditions, foreach entries
// and their {{ }} values into CEL written against the schema of the kinds
// a rule matches (internal/kubeschema): what the API server guarantees of
// an object it admits (a field's shape, presence, an enum's values, a
// quantity's format) is assumed instead of tested, and each assumption is
// recorded as an ir.SchemaRead, which the runtime checks offline before it
// trusts the typed form. Expressions are built as cel-go ASTs with
// internal/celbuild. The exact, schema-free translations (package pattern,
// package conditions) stay each policy's Dynamic form; where this package
// does not take a construct, the caller keeps that form.
package typed
