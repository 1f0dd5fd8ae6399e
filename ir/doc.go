// Package ir is admitc's intermediate representation: the one data model that
// the compiler produces and that every backend and the runtime consume.
//
// The IR is plain data with JSON tags, so ir.json is itself a reviewable,
// golden artefact. Every validating check, built-in or not, is lowered to CEL
// validations before it reaches the IR, and every mutation to a CEL JSONPatch
// expression, so all consumers evaluate or emit the same expressions.
//
// Package ir must not import the compiler, the runtime, any backend or any
// I/O: it is the contract between them.
package ir
