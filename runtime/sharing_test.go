package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/admitc/admitc/runtime"
)

// TestVariablesAreNotSharedBetweenPolicies: policies compile in shared CEL
// environments, yet each evaluates its own variables. Two policies declare a
// variable of the same name and type with different expressions; a third
// declares it with another type, which must not leak into the first two.
func TestVariablesAreNotSharedBetweenPolicies(t *testing.T) {
	e := engineFromYAML(t, `policies:
  - name: small
    type: cel
    match: {kinds: [Pod]}
    variables: [{name: limit, expression: "1"}]
    validations: [{expression: "object.spec.containers.size() < variables.limit", message: small}]
  - name: large
    type: cel
    match: {kinds: [Pod]}
    variables: [{name: limit, expression: "100"}]
    validations: [{expression: "object.spec.containers.size() < variables.limit", message: large}]
  - name: text
    type: cel
    match: {kinds: [Pod]}
    variables: [{name: limit, expression: "'x'"}]
    validations: [{expression: "variables.limit == 'x'", message: text}]
`)
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	var denied []string
	for _, v := range res.Violations {
		denied = append(denied, v.Policy)
	}
	assert.Equal(t, []string{"small"}, denied)
}
