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
