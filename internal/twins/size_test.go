package twins_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/twins"
)

// CELSize counts the CEL of every place a ValidatingAdmissionPolicy holds
// it, whitespace runs as one character, and nothing of other objects.
func TestCELSize(t *testing.T) {
	vap := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: p
spec:
  matchConditions:
  - name: m
    expression: "a"
  variables:
  - name: v
    expression: "bb"
  validations:
  - expression: "ccc   &&
      d"
    messageExpression: "'e'"
  auditAnnotations:
  - key: k
    valueExpression: "ffff"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: p
spec:
  policyName: p
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: q
spec:
  validations:
  - expression: "true"
`
	n, err := twins.CELSize([]byte(vap))
	require.NoError(t, err)
	assert.Equal(t, 1+2+len("ccc && d")+3+4+4, n)
}
