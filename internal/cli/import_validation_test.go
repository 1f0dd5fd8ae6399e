package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCompileRefusesWhatTheClusterRefuses: an imported object that its API
// server (kube-apiserver's admissionregistration validation, Kyverno's CRD
// schema) or its engine's webhook (Kyverno's, Gatekeeper's) refuses is
// refused with exit 2, each error at its field with the upstream message
// and how to fix it; before, such bindings were read as not enforcing.
// test/e2e's TestImportedObjectsTheAPIServerRefuses sends the same files to
// kube-apiserver.
func TestCompileRefusesWhatTheClusterRefuses(t *testing.T) {
	const dir = "testdata/bad/import/"
	cases := map[string]struct {
		files []string
		want  string
	}{
		"VAP binding: lowercase action": {[]string{"replica-limit.yaml", "binding-lowercase-action.yaml"}, dir + `binding-lowercase-action.yaml:7:23: spec.validationActions[0]: Unsupported value: "deny": supported values: "Audit", "Deny", "Warn" (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; write Deny, Warn or Audit, capitalised, each once)`},
		"VAP binding: Deny with Warn":   {[]string{"replica-limit.yaml", "binding-deny-warn.yaml"}, dir + `binding-deny-warn.yaml:7:22: spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose) (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; say [Deny] to enforce, or [Warn, Audit] to roll out)`},
		"VAP binding: duplicate action": {[]string{"replica-limit.yaml", "binding-duplicate-action.yaml"}, dir + `binding-duplicate-action.yaml:7:36: spec.validationActions[2]: Duplicate value: "Deny" (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; write Deny, Warn or Audit, capitalised, each once)`},
		"VAP binding: paramRef name and selector": {[]string{"replica-limit.yaml", "binding-paramref-name-and-selector.yaml"}, dir + "binding-paramref-name-and-selector.yaml:9:11: spec.paramRef.name: Forbidden: name and selector are mutually exclusive (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; keep name to use one parameter object, or selector to use every object it selects)\n" +
			dir + `binding-paramref-name-and-selector.yaml:10:5: spec.paramRef.selector: Forbidden: name and selector are mutually exclusive (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; keep name to use one parameter object, or selector to use every object it selects)`},
		"VAP binding: paramRef without parameterNotFoundAction": {[]string{"replica-limit.yaml", "binding-paramref-no-notfound-action.yaml"}, dir + `binding-paramref-no-notfound-action.yaml:8:3: spec.paramRef.parameterNotFoundAction: Required value (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; say Deny (a request is denied when no parameter object is found) or Allow (the binding does nothing then))`},
		"VAP binding: unknown parameterNotFoundAction":          {[]string{"replica-limit.yaml", "binding-paramref-unknown-notfound-action.yaml"}, dir + `binding-paramref-unknown-notfound-action.yaml:11:30: spec.paramRef.parameterNotFoundAction: Unsupported value: "Ignore": supported values: "Deny", "Allow" (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; say Deny (a request is denied when no parameter object is found) or Allow (the binding does nothing then))`},
		"VAP binding: invalid matchExpressions": {[]string{"replica-limit.yaml", "binding-bad-match-expressions.yaml"}, dir + "binding-bad-match-expressions.yaml:16:19: spec.matchResources.namespaceSelector.matchExpressions[0].operator: Invalid value: \"in\": not a valid selector operator (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; use In, NotIn, Exists or DoesNotExist)\n" +
			dir + "binding-bad-match-expressions.yaml:18:9: spec.matchResources.namespaceSelector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn' (kube-apiserver refuses this ValidatingAdmissionPolicyBinding; set it)"},
		"VAP: matchCondition using variables": {[]string{"policy-match-condition-variables.yaml"}, dir + "policy-match-condition-variables.yaml:18:19: spec.matchConditions[0].expression: undeclared reference to 'variables'\n" +
			" |     expression: \"!variables.name.startsWith('system-')\"\n" +
			` | ..................^`},
		"ClusterPolicy: validationFailureAction outside its enum": {[]string{"kyverno-validation-failure-action.yaml"}, dir + `kyverno-validation-failure-action.yaml:9:28: spec.validationFailureAction: Unsupported value: "deny": supported values: "audit", "enforce", "Audit", "Enforce" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; say Enforce to block, Audit to report)`},
		"ClusterPolicy: lowercase rule failureAction":             {[]string{"kyverno-failure-action-lowercase.yaml"}, dir + `kyverno-failure-action-lowercase.yaml:19:22: spec.rules[0].validate.failureAction: Unsupported value: "enforce": supported values: "Audit", "Enforce" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; say Enforce to block, Audit to report)`},
		"ClusterPolicy: validationFailureActionOverrides action":  {[]string{"kyverno-overrides-action.yaml"}, dir + `kyverno-overrides-action.yaml:11:13: spec.validationFailureActionOverrides[0].action: Unsupported value: "block": supported values: "audit", "enforce", "Audit", "Enforce" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; say Enforce to block, Audit to report)`},
		"ClusterPolicy: lowercase failurePolicy":                  {[]string{"kyverno-failure-policy.yaml"}, dir + `kyverno-failure-policy.yaml:10:18: spec.failurePolicy: Unsupported value: "fail": supported values: "Ignore", "Fail" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; write one of the supported values, spelled as shown: case matters)`},
		"ClusterPolicy: webhookTimeoutSeconds over 30":            {[]string{"kyverno-webhook-timeout.yaml"}, dir + `kyverno-webhook-timeout.yaml:10:26: spec.webhookTimeoutSeconds: Invalid value: 45: the timeout value must be between 1 and 30 seconds (Kyverno's webhook refuses this ClusterPolicy; give 1 to 30 seconds)`},
		"ValidatingPolicy: lowercase and duplicate validationActions": {[]string{"kyverno-vpol-validation-actions.yaml"}, dir + "kyverno-vpol-validation-actions.yaml:6:23: spec.validationActions[0]: Unsupported value: \"deny\": supported values: \"Deny\", \"Audit\", \"Warn\" (the API server refuses this ValidatingPolicy by Kyverno's CRD schema; write Deny, Warn or Audit, capitalised, each once)\n" +
			dir + `kyverno-vpol-validation-actions.yaml:6:36: spec.validationActions[2]: Duplicate value: "Audit" (the API server refuses this ValidatingPolicy by Kyverno's CRD schema; write Deny, Warn or Audit, capitalised, each once)`},
		"ValidatingPolicy: lowercase failurePolicy": {[]string{"kyverno-vpol-failure-policy.yaml"}, dir + `kyverno-vpol-failure-policy.yaml:7:18: spec.failurePolicy: Unsupported value: "fail": supported values: "Ignore", "Fail" (the API server refuses this ValidatingPolicy by Kyverno's CRD schema; write one of the supported values, spelled as shown: case matters)`},
		"ValidatingPolicy: no resourceRules":        {[]string{"kyverno-vpol-no-resource-rules.yaml"}, dir + `kyverno-vpol-no-resource-rules.yaml:7:3: spec.matchConstraints.resourceRules: a ValidatingPolicy needs matchConstraints with at least one resource rule (Kyverno's webhook refuses it without; a policy without it matches nothing)`},
		"constraint: capitalised enforcementAction": {[]string{"gatekeeper-allowed-repos-template.yaml", "gatekeeper-enforcement-action.yaml"}, dir + `gatekeeper-enforcement-action.yaml:6:22: spec.enforcementAction: enforcementAction must be deny, warn, dryrun or scoped (lowercase: Gatekeeper's webhook refuses any other value), got "Deny"`},
		"constraint: invalid namespaceSelector":     {[]string{"gatekeeper-allowed-repos-template.yaml", "gatekeeper-match-selector.yaml"}, dir + `gatekeeper-match-selector.yaml:14:19: spec.match.namespaceSelector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator (Gatekeeper's webhook refuses this constraint; use In, NotIn, Exists or DoesNotExist)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"compile", "--backend", "vap"}
			for _, f := range tc.files {
				args = append(args, "--policies", dir+f)
			}
			out, stderr, code := run(t, args...)
			assert.Equal(t, ExitUsage, code)
			assert.Empty(t, out)
			assert.Equal(t, "error: cannot compile:\n"+tc.want+"\n", stderr)
		})
	}
}

// TestCompileReadsWhatTheClusterDefaults: what the API server accepts by
// defaulting it is read: a v1alpha1 binding's paramRef without
// parameterNotFoundAction (defaulted to Deny there, required in v1), and
// Kyverno's legacy lowercase validationFailureAction enforce, which
// enforces.
func TestCompileReadsWhatTheClusterDefaults(t *testing.T) {
	out, stderr, code := run(t, "compile", "--backend", "vap", "--policies", "testdata/bad/import/replica-limit.yaml", "--policies", "testdata/good/binding-v1alpha1-default-notfound-action.yaml")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "    parameterNotFoundAction: Deny\n")
	out, stderr, code = run(t, "compile", "--backend", "vap", "--policies", "testdata/good/kyverno-legacy-enforce.yaml")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "  validationActions:\n  - Deny\n")
}
