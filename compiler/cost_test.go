package compiler_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/adversarial"
)

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Policies built to make compiling them costly are refused, citing the
// limit they pass at its place, and refusing them costs little: nested
// foreach took time and memory exponential in depth (depth 20 reached
// 3.9 GB), nested anchors and flat entries grew with the square.
func TestAdversarialPoliciesAreRefusedCheaply(t *testing.T) {
	// The CEL environments are built once per process: not this test's cost.
	compiler.Compile([]compiler.Source{{Name: "warm.yaml", Data: adversarial.NestedForEach(1)}}, compiler.Options{})
	cases := map[string]struct {
		policy []byte
		want   string
	}{
		"foreach nested 20 deep": {adversarial.NestedForEach(20),
			`p.yaml:18:7: spec.rules[0].validate.foreach: validate.foreach depth: a policy deeper than 6 foreach levels (this one has 20) is not translated: each level adds a loop around the levels inside it, and type-checking the rule's CEL (by admitc and by the API server) grows faster than its size: flatten the nesting, or keep the rule under Kyverno (ClusterPolicy "nested-foreach" rule "r"); admitc compile --keep-going emits the rest`},
		"1200 nested conditional anchors": {adversarial.NestedAnchors(1200),
			`p.yaml:19:284: spec.rules[0].validate.pattern.spec.x` + strings.Repeat(".=(a)", 30) + `: validate.pattern construct: a pattern nested deeper than 32 levels is not translated: the API server's CEL parser refuses expressions nested more than 250 levels; rewrite the pattern without it (or the check as validate.cel), or keep this rule under Kyverno (ClusterPolicy "nested-anchors" rule "r"); admitc compile --keep-going emits the rest`},
		"1000 foreach entries": {adversarial.FlatForEach(1000),
			`p.yaml:18:7: spec.rules[0].validate.foreach: validate.foreach size: the emitted expression is 164576 characters or more, the API server's limit is 100000: split the rule into smaller ones, or keep it under Kyverno (ClusterPolicy "flat-foreach" rule "r"); admitc compile --keep-going emits the rest`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var diags compiler.Diagnostics
			n := allocated(func() {
				_, diags = compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: c.policy}}, compiler.Options{})
			})
			require.Len(t, diags, 1)
			assert.Equal(t, c.want, diags[0].String())
			assert.Less(t, n, uint64(200<<20), "refusing it allocated %d MB", n>>20)
		})
	}
}

// A foreach nested as deep as allowed compiles, in memory that grows with
// its depth, not exponentially (depth 3 allocated 632 MB, depth 5 9.6 GB,
// before entries shared
// their failure test).
func TestNestedForEachWithinTheLimitCompiles(t *testing.T) {
	compiler.Compile([]compiler.Source{{Name: "warm.yaml", Data: adversarial.NestedForEach(1)}}, compiler.Options{})
	var diags compiler.Diagnostics
	n := allocated(func() {
		_, diags = compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: adversarial.NestedForEach(3)}}, compiler.Options{})
	})
	require.Empty(t, diags)
	assert.Less(t, n, uint64(600<<20), "compiling it allocated %d MB", n>>20)
}
