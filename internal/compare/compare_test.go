package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
