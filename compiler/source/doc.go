// Package source holds what every policy frontend shares to read a YAML or
// JSON document of a foreign format with positions: the document and its
// lines, strict decoding into the format's real Go types that reports
// unknown fields and wrong types at file:line:col with their field path,
// looking up the node of a field path (to place CEL errors), and placing
// the field errors of an upstream validation (FieldErrors). It imports the
// IR, internal/diag and the API machinery's JSON and field errors; never a
// frontend, a backend or the runtime.
package source
