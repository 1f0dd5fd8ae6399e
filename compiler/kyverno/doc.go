// Package kyverno reads Kyverno policies into the IR:
//
//   - kyverno.io/v1 ClusterPolicy and Policy whose rules are validate.cel:
//     each rule becomes one imported validating policy named POLICY.RULE
//     (NAMESPACE.POLICY.RULE for a Policy), with one binding whose actions
//     are the rule's failure action (Enforce: Deny; Audit: Audit, and Warn
//     too when spec.emitWarning is true, as Kyverno's webhook warns);
//     celPreconditions become matchConditions; an expression without a
//     message inherits validate.message. The rule's match and exclude are
//     lowered to resourceRules that cover every kind they name (resolved
//     through Options.Kinds: built-in kinds and the CRDs given; a kind
//     that does not resolve is a guess recorded in ir.UnresolvedKind), a
//     namespaceSelector where one is given, and one generated matchCondition
//     (kyverno-match) that decides exactly as Kyverno's engine does
//     (pkg/engine/utils/match.go): kinds with group, version and
//     subresource wildcards, names, namespaces, annotations, selector,
//     operations and subjects. Autogen is Kyverno's own (pkg/autogen/v1):
//     the same controllers, annotation, rule names and text rewrite, each
//     generated rule one more IR policy.
//   - kyverno.io/v1 ClusterPolicy and Policy whose rules are
//     validate.pattern or validate.anyPattern: the same policy per rule,
//     whose variables hold the pattern's result as the pattern subpackage
//     translates it (PatternVariable, PatternBeforeVariable for Enforce
//     rules on UPDATE, OutcomeVariable), with one validation that fails on
//     Kyverno's fail and raises an evaluation error on its engine error,
//     and the audit annotation SkipAnnotation on skip; DELETE is not
//     matched, as Kyverno's validate handler gives no response on it.
//     Autogen nests the pattern under the pod template as Kyverno does. A
//     validate.message with {{ }} variables becomes a messageExpression.
//   - validate.deny rules and JMESPath preconditions (denyrule.go), their
//     conditions translated by the conditions subpackage.
//   - validate.foreach rules (foreach.go): each entry's list a variable
//     (ListVariable0, ...), the rule's result ForEachVariable (and
//     ForEachBeforeVariable for Enforce rules on UPDATE) decided element by
//     element as Kyverno's validateForEach does, OutcomeVariable, one
//     validation, SkipAnnotation, and NoResponseAnnotation when no element
//     was validated (Kyverno's engine gives no response).
//   - kyverno.io/v1 ClusterPolicy and Policy whose rules are mutate with
//     patchStrategicMerge or patchesJson6902 (mutaterule.go): one
//     imported mutating policy per rule, with one JSONPatch mutation that
//     the mutate subpackage writes, the walk of Kyverno's preprocessing in
//     the variable PatchWalkVariable, preconditions as a match condition,
//     no DELETE; autogen nests the overlay under the pod template.
//   - mutate.foreach rules (mutateforeach.go): one JSONPatch mutation per
//     entry, in order, each over its list (order, the entry's
//     preconditions, null elements skipped); package mutate writes the
//     patches whose per-element operations are exact on the entry's object.
//   - policies.kyverno.io ValidatingPolicy and MutatingPolicy in v1alpha1,
//     v1beta1 and v1: one imported policy each, VAP- and MAP-shaped, plus
//     one per autogen target group (pkg/cel/policies/*/autogen).
//
// A rule or policy that needs something admitc cannot evaluate offline
// (context entries loaded by an API call, from an image registry or the
// global context, context in mutate.foreach rules and foreach entries,
// JMESPath outside the conditions subset, {{ }} variables in patterns, $( )
// references in foreach messages, nested foreach mutations and mutate
// targets, generate, verifyImages, Kyverno's http and image data CEL
// libraries, roles and clusterRoles) is refused with its place, the
// feature's name and why, and the rest of the document still compiles:
// refusals are returned as ir.Skipped, which the compiler turns into errors
// unless asked to keep going.
//
// Every IR policy carries an ir.PolicyRef naming its Kyverno policy and
// rule, so a test runner can report in Kyverno's names.
//
// Before lowering, a document is refused as a cluster would refuse to
// create it (crds.go, webhook.go): by Kyverno's CRD schema, which the API
// server checks (validationFailureAction audit, enforce, Audit or Enforce;
// a rule's failureAction only Audit or Enforce; failurePolicy Ignore or
// Fail; validationActions Deny, Audit or Warn, each once), then by
// kyvernov1's Validate, which Kyverno's webhook runs (webhook timeouts,
// rule types, names); each error at its field.
//
// The package imports the IR, compiler/source, compiler/crd, compiler/kyverno/pattern,
// compiler/kyverno/conditions, compiler/kyverno/mutate, internal/celenv
// (quoting), internal/diag, internal/apiconv and Kyverno's API types (not its
// engine); never a backend or the runtime.
package kyverno
