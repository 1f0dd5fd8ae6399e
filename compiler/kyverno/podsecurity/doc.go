// Package podsecurity translates a Kyverno validate.podSecurity block into
// CEL that decides as Kyverno v1.19.1's validate handler does
// (pkg/engine/handlers/validation/validate_pss.go and pkg/pss): the Pod
// Security Standards checks of k8s.io/pod-security-admission (Kyverno's
// fork, which go.mod pins), picked by level and version as Kyverno picks
// them, run on the Pod or on a pod controller's template, with the rule's
// exclusions applied as Kyverno's exemptExclusions applies them, and the
// failure message as Kyverno formats it.
//
// The phases are: the pod views (view.go: the pod as Kyverno decodes it, an
// exclusion's pod of matching containers or its pod with one "fake"
// container), the checks over a view as lists of field-error records
// (checks.go, one function per check and version), the selection of checks
// by level and version (select.go), and the rule's result with its
// exclusions and message (translate.go). What cannot be reproduced is
// refused with a *Error saying why.
//
// The package imports Kyverno's API types and the CEL quoting helpers of
// the pattern package only; never the IR, a backend, or Kyverno's engine
// (its differential tests do, behind the kyverno build tag).
package podsecurity
