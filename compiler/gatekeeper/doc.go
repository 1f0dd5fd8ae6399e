// Package gatekeeper reads OPA Gatekeeper policies into the IR: a
// ConstraintTemplate (templates.gatekeeper.sh v1 and v1beta1) whose
// admission.k8s.gatekeeper.sh target has a K8sNativeValidation (CEL) code
// entry, and its Constraints (constraints.gatekeeper.sh). Rego is not
// translated: a template with only Rego is refused, saying so.
//
// The lowering is Gatekeeper's own ValidatingAdmissionPolicy generation,
// made exact:
//
//   - a template is one imported validating policy, named after the
//     template, with paramKind constraints.gatekeeper.sh/v1beta1 and the
//     template's CRD kind; its variables are anyObject and params (with
//     Gatekeeper's expressions), then the template's; then its validations,
//     matchCondition entries and failurePolicy (default Fail);
//   - the constraint's spec.match parts that no binding field can say
//     (namespaces and excludedNamespaces with globs, name, scope) are
//     matchConditions generated on the policy that read params.spec.match,
//     so one policy serves every constraint of its kind;
//   - a constraint is one binding: paramRef names it, kinds become
//     resourceRules, labelSelector the objectSelector, namespaceSelector the
//     namespaceSelector, enforcementAction the validationActions; and the
//     constraint object itself is the binding's compiled-in parameter object
//     (ir.Binding.Params), because in Gatekeeper the constraint is the
//     parameter.
//
// Keeping the constraint as params (rather than inlining its parameters
// into the CEL, one policy per constraint) keeps the template's CEL exactly
// as Gatekeeper evaluates it (params.spec.parameters read at run time, with
// the same dynamic types), keeps errors at their place in the template, and
// lets the vap backend emit what the API server accepts in a cluster where
// Gatekeeper serves the constraint CRDs: Gatekeeper's own generated policy
// has the same shape.
//
// The package imports the IR, compiler/source, internal/diag and
// internal/apiconv, and the API machinery (label selector validation); never a
// backend or the runtime.
package gatekeeper
