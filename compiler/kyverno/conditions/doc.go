// Package conditions translates the JMESPath side of Kyverno ClusterPolicy
// rules into CEL that decides as Kyverno v1.19's engine does: `{{ }}`
// variable substitution (pkg/engine/variables/vars.go), the condition
// operators of deny rules and preconditions (pkg/engine/variables/operator),
// any/all blocks (pkg/engine/variables/evaluate.go) and the JMESPath
// queries they hold, as Kyverno's go-jmespath fork evaluates them (a key
// missing from a map is an error, which projections, functions, `||` and
// comparisons turn into null).
//
// The JMESPath subset (query.go): the roots request.object,
// request.oldObject (request.object reads the old object on DELETE, as
// Kyverno rewrites it), request.operation, request.namespace, request.name,
// request.userInfo.username and .groups, serviceAccountName,
// serviceAccountNamespace, images (images.go: Kyverno's parsed image
// references, computed once per policy as ImagesVariable), and in a
// foreach element, elementIndex and
// elementN, elementIndexN (Scope.Loops), and the rule's context variables
// (context.go: Scope.Context, loaded as Kyverno's deferred loader loads
// them, by name, when a query's text names them); field access, indexes, `[]`
// flatten, `[*]` and `.*` projections, `[?cond]` filters with comparisons,
// multi-select lists, `!`, `&&` and `||`, pipes, literals, and the
// functions of functions.go: the fork's length, to_string, contains,
// starts_with, ends_with, keys, values and join, and Kyverno's to_upper,
// to_lower, regex_match and split. Any other construct (other functions,
// slices, multi-select hashes,
// other roots) is refused with an *Error. Nested
// variables ({{ images.containers."{{ element.name }}".tag }}) are
// substituted inner first, as Kyverno does, when the inner ones name a
// field (substitute.go nestedText).
//
// Where Kyverno handles a query's "Unknown key" error itself (a foreach
// list skips its entry, a foreach precondition its element), Scope.Capture
// turns it into the value UnknownKey, and Outcome evaluates a condition
// block to 'true', 'false' or 'error' in Kyverno's order.
//
// Phases: substitute.go finds the `{{ }}` variables of a value, query.go
// parses each with go-jmespath's parser and lowers its AST (functions.go
// its function calls), operators.go
// renders an operator over two values and conditions.go combines them.
// Values Kyverno would turn into text through fmt or JSON and that CEL
// cannot write the same way (maps and lists, numbers in exponent form) raise
// an evaluation error instead of deciding differently.
//
// The package imports the CEL conventions of internal/celenv only as text
// and the Kyverno API types; it must not import the Kyverno engine (the
// differential tests do, behind the kyverno build tag), the IR, or a backend.
package conditions
