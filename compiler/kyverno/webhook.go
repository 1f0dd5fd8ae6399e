package kyverno

import (
	"regexp"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/compiler/source"
)

// refused reports whether a cluster would refuse to create the document:
// kube-apiserver by Kyverno's CRD schema (crdErrors), then Kyverno's
// policy webhook by webhookErrors (nil for kinds whose webhook checks
// admitc makes itself). Every error is reported at its field.
func (r *reader) refused(webhookErrors func() field.ErrorList) bool {
	gv, _ := schema.ParseGroupVersion(r.apiVersion)
	if ds := crdErrors(r.doc, gv.WithKind(r.kind)); len(ds) > 0 {
		r.diags = append(r.diags, ds...)
		return true
	}
	if webhookErrors == nil {
		return false
	}
	errs := webhookErrors()
	for _, e := range errs {
		if e.Field == "name" { // ValidatePolicyName's path
			e.Field = "metadata.name"
		}
		// Kyverno's podSecurity checks name their field without
		// "validate." (pkg/validation ValidatePodSecurity's path).
		e.Field = podSecurityPath.ReplaceAllString(e.Field, "${1}.validate.podSecurity")
	}
	r.diags = append(r.diags, r.doc.FieldErrors(errs, source.Refusal{By: "Kyverno's webhook refuses this " + r.kind, Fixes: webhookFixes})...)
	return len(errs) > 0
}

var podSecurityPath = regexp.MustCompile(`^(spec\.rules\[\d+\])\.podSecurity`)

// clusterPolicyErrors are what Kyverno's policy webhook refuses in a
// ClusterPolicy or Policy by the API types' own validation
// (kyvernov1.ClusterPolicy.Validate, kyvernov1.Policy.Validate: rule
// types, match and exclude, names, webhook timeouts, deprecated fields
// with their successors). The webhook's checks that need the cluster
// (its resource kinds, service accounts) or the engine are not made; what
// admitc cannot translate is refused rule by rule.
func clusterPolicyErrors(p *clusterPolicyObject, kind string) field.ErrorList {
	if kind == "Policy" {
		_, errs := (&kyvernov1.Policy{ObjectMeta: p.Metadata, Spec: p.Spec}).Validate(nil)
		return errs
	}
	_, errs := (&kyvernov1.ClusterPolicy{ObjectMeta: p.Metadata, Spec: p.Spec}).Validate(nil)
	return errs
}

// webhookFixes is the advice for Kyverno's webhook errors whose message
// does not say what to write.
var webhookFixes = map[string]string{
	"spec.webhookTimeoutSeconds":               "give 1 to 30 seconds",
	"spec.webhookConfiguration.timeoutSeconds": "give 1 to 30 seconds",
	"metadata.name":                            "Kyverno writes the name into report labels: shorten it to 63 characters",
	"spec.rules[*].name":                       "give each rule its own name",
	"spec.failurePolicy":                       "keep spec.webhookConfiguration.failurePolicy and remove the deprecated spec.failurePolicy",
	"spec.generateExistingOnPolicyUpdate":      "set generateExisting on each generate rule instead",
	"spec.validationFailureActionOverrides":    "a Policy acts in its own namespace: use a ClusterPolicy for per-namespace actions",
	"metadata.annotations":                     "remove the annotation, or list the controllers (or none)",
	"spec.rules[*]":                            "give each rule exactly one of validate, mutate, generate or verifyImages",
}
