package compiler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/adversarial"
)

// A file past its compile budget is refused at the policy or expression
// where the budget ran out; its CEL size is checked before any is
// type-checked.
func TestCompileBudget(t *testing.T) {
	src := []compiler.Source{{Name: "p.yaml", Data: adversarial.FlatForEachUnresolved(1)}, {Name: "q.yaml", Data: adversarial.NestedForEach(1)}}

	_, diags := compiler.Compile(src, compiler.Options{Budget: compiler.Budget{CEL: 300}})
	require.Len(t, diags, 1)
	assert.Equal(t, `p.yaml:9:5: spec.rules[0]: compile budget exceeded at spec.rules[0]: the file's policies emit 4291 characters of CEL (4291 by this one), the budget is 300 per file; simplify or split the policy (nesting and repeated entries cost the most)`, diags[0].String())

	_, diags = compiler.Compile(src[:1], compiler.Options{Budget: compiler.Budget{Time: time.Nanosecond}})
	require.Len(t, diags, 1)
	assert.Regexp(t, `^p\.yaml:9:5: spec\.rules\[0\]: compile budget: compile budget exceeded at spec\.rules\[0\]\.validate\.foreach(\[0\]\.list)?: lowering and type-checking the file took [0-9.]+m?s of wall-clock time, past the 1ns guard \(a guard, not the budget: the CEL budget bounds a file deterministically; this means a construct those limits miss, or a machine far too busy\); simplify or split the policy \(nesting and repeated entries cost the most\) \(ClusterPolicy "flat-foreach-unresolved" rule "r"\)`, diags[0].String())

	set, diags := compiler.Compile(src, compiler.Options{KeepGoing: true, Budget: compiler.Budget{Time: time.Nanosecond}})
	require.Empty(t, diags)
	require.NotEmpty(t, set.Skipped)
	for _, s := range set.Skipped {
		assert.Equal(t, "compile budget", s.Feature, s.Reason)
	}
}
