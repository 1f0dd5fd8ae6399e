package kyverno_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
)

// A deny rule of a policy that matches DELETE, whose context entry's own
// query reads request.object (null on DELETE, while its {{ }}
// substitutions read the old object), is written apart for DELETE and for
// the other operations instead of keeping the exact form.
func TestContextQueryOfRequestObjectIsWrittenApartForDelete(t *testing.T) {
	path := "../../examples/kyverno-pattern/restrict-team-workloads-context/policy.yaml"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	set, diags := compiler.Compile([]compiler.Source{{Name: path, Data: data}}, compiler.Options{})
	require.Empty(t, diags.Error())
	for _, p := range set.Policies {
		if p.Name != "restrict-team-workloads-context.known-team" {
			continue
		}
		require.NotNil(t, p.Dynamic)
		assert.Empty(t, p.Variables)
		require.Len(t, p.Validations, 1)
		v := p.Validations[0]
		assert.Contains(t, v.Expression, `request.operation != "DELETE" && (object.metadata.?labels.?team.orValue("unassigned") in ["payments", "search"]`,
			"on DELETE the team is the default (the query reads null), so the rule denies")
		assert.Contains(t, v.MessageExpression, `(request.operation == "DELETE") ? "team 'unassigned' is not one of`)
		return
	}
	t.Fatal("no known-team policy")
}
