package kyverno_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
)

// Kyverno's published "memory requests equal limits" rule compares two
// quantity fields of each container, under a foreach precondition that
// holds only where the request is set. Its translation reads the request
// without a presence test (the precondition guards it), compares the two
// as quantities, keeps the exact form as Dynamic, and records the fields
// as quantities, so that offline an object whose quantity does not parse
// is judged by the exact form.
func TestQuantityFieldsCompareAsQuantities(t *testing.T) {
	path := "../../examples/kyverno-pattern/deny-legacy-conditions/policy.yaml"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	set, diags := compiler.Compile([]compiler.Source{{Name: path, Data: data}}, compiler.Options{})
	require.Empty(t, diags.Error())
	checked := 0
	for _, p := range set.Policies {
		if !strings.Contains(p.Name, "memory-requests-equal-limits") {
			continue
		}
		checked++
		require.NotNil(t, p.Dynamic, "%s: typed, with the exact form kept", p.Name)
		require.Len(t, p.Validations, 1, p.Name)
		e := p.Validations[0].Expression
		assert.Contains(t, e, ".resources.?requests.?memory.orValue(\"\") != \"\" && (", p.Name)
		assert.Contains(t, e, "quantity(container.resources.requests.memory) != quantity(container.resources.limits.memory)", p.Name)
		assert.Less(t, len(e), 1500, "%s: %s", p.Name, e)
		for _, f := range []string{"requests", "limits"} {
			assert.True(t, slices.ContainsFunc(p.SchemaReads, func(r ir.SchemaRead) bool {
				return strings.HasSuffix(r.Path, ".resources."+f+".memory") && r.Format == ir.FormatQuantity && !r.Present
			}), "%s: %s read as a quantity: %+v", p.Name, f, p.SchemaReads)
		}
	}
	assert.Equal(t, 3, checked, "the rule and its two autogen rules")
}

// A pattern's $( ) references name places of the pattern itself, so the
// typed translation substitutes them as the exact one does: the liveness
// probe of require-probe-alignment is checked against 8080 and >= 10, a
// whole number written as Go's %f by the substitution read as one.
func TestPatternReferencesAreTyped(t *testing.T) {
	path := "../../examples/kyverno-pattern/require-probe-alignment/policy.yaml"
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	set, diags := compiler.Compile([]compiler.Source{{Name: path, Data: data}}, compiler.Options{})
	require.Empty(t, diags.Error())
	require.Len(t, set.Policies, 3)
	for _, p := range set.Policies {
		require.NotNil(t, p.Dynamic, "%s: typed, with the exact form kept", p.Name)
		e := p.Validations[0].Expression
		assert.Contains(t, e, "container.livenessProbe.?initialDelaySeconds.orValue(0) >= 10 &&", p.Name)
		assert.NotContains(t, e, "$(", p.Name)
		assert.NotContains(t, e, "10.000000", p.Name)
	}
}
