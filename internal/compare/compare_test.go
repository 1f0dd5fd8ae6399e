package compare

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Kyverno lists a podSecurity rule's failing checks in Go's map order when
// the rule excludes controls: the same checks in another order agree, other
// checks or other fields do not.
func TestPodSecurityChecksAgreeInAnyOrder(t *testing.T) {
	const (
		a = "(Forbidden reason: unrestricted capabilities, field error list: [spec.containers[0].securityContext.capabilities.drop: Required value])"
		b = "(Forbidden reason: non-default capabilities, field error list: [spec.containers[0].securityContext.capabilities.add is forbidden, forbidden values found: [NET_ADMIN]])"
		c = "(Forbidden reason: runAsNonRoot != true, field error list: [spec.containers[0].securityContext.runAsNonRoot: Required value])"
	)
	msg := func(checks string) string {
		return "Validation rule 'restricted' failed. It violates PodSecurity \"restricted:v1.29\": " + checks
	}
	kyverno := Result{Engine: "kyverno", Verdict: Denied, Messages: []string{"[p] " + msg(a+b)}}
	deny := func(m string) Result {
		return Result{Engine: "admitc", Verdict: Denied, Messages: []string{"[p.restricted] " + m}}
	}

	assert.True(t, Agree(deny(msg(b+a)), kyverno))
	assert.True(t, Agree(deny(msg(a+b)), kyverno))
	assert.False(t, Agree(deny(msg(a+c)), kyverno))
	assert.False(t, Agree(deny(msg(a+b+c)), kyverno), "a third check is a difference")
	assert.Equal(t, "no checks here", podSecurityChecksSorted("no checks here"))
}

// A translated rule that errs as Kyverno's does raises Kyverno's error
// text as a missing map key: the API server's "resulted in error: no such
// key: ERROR" agrees with Kyverno's ERROR, and with no other error.
func TestRaisedKyvernoErrorsAgree(t *testing.T) {
	const kyvernoErr = `validation failure: failed to check deny conditions: failed to substitute variables in condition key: failed to resolve element.path at path : JMESPath query failed: Unknown key "path" in path`
	admitc := Result{Engine: "admitc", Verdict: Denied, Messages: []string{
		"[p.check] expression '{}[variables.failures[0]]' resulted in error: no such key: " + kyvernoErr,
	}}
	kyverno := func(m string) Result {
		return Result{Engine: "kyverno", Verdict: Denied, Messages: []string{"[p] " + m}}
	}
	assert.True(t, Agree(admitc, kyverno(kyvernoErr)))
	assert.False(t, Agree(admitc, kyverno(`validation failure: failed to check deny conditions: JMESPath query failed: Unknown key "image" in path`)))
	assert.False(t, Agree(admitc, kyverno("path")), "a part of the error is not the error")
	assert.False(t, Agree(admitc, kyverno("")))
}

// Where the exact dynamic form decides a rule whose {{ }} variable does
// not resolve, admitc fails with the CEL evaluation error of the
// expression that reads the variable and Kyverno with its substitution
// error: both deny, an expected difference. A denial for another reason
// is not explained by it.
func TestSubstitutionErrorsAreAnExpectedDifference(t *testing.T) {
	var explains func(ref, r Result) bool
	for _, d := range ExpectedDifferences {
		if strings.HasPrefix(d.Reason, "a rule whose {{ }} variable does not resolve") {
			explains = d.Explains
		}
	}
	require.NotNil(t, explains)
	admitc := Result{Engine: "admitc", Verdict: Denied, Messages: []string{
		`[p.r] expression 'variables.kyvernoOutcome != 'fail'' resulted in error: composited variable "kyvernoEntry0" fails to evaluate: no such key: resources`,
	}}
	kyverno := Result{Engine: "kyverno", Verdict: Denied, Messages: []string{
		`[p] validation failure: variable substitution failed: failed to resolve element.resources.requests.cpu at path /resources/limits/cpu: JMESPath query failed: Unknown key "resources" in path`,
	}}
	assert.True(t, explains(admitc, kyverno))
	diffs, expected := differences([]Result{admitc, kyverno})
	assert.Empty(t, diffs)
	assert.Len(t, expected, 1, "the texts differ: an expected difference")
	failed := kyverno
	failed.Messages = []string{"[p] validation failure: validation error: limits. rule r failed at path /resources/limits/"}
	assert.False(t, explains(admitc, failed))
	allowed := kyverno
	allowed.Verdict = Allowed
	assert.False(t, explains(admitc, allowed))
}
