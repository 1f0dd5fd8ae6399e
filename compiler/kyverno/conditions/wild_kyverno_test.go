//go:build kyverno

package conditions

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/kyverno/kyverno/ext/wildcard"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
)

// wildRunes are the characters of the generated patterns and strings:
// the wildcards, what a regular expression escapes or quotes (\Q, \E and
// the backslash above all), a newline and a letter beyond ASCII.
var wildRunes = []rune{'a', 'b', 'E', 'Q', '\\', '*', '?', '.', '+', '(', ')', '[', ']', '{', '|', '^', '$', '\n', 'é'}

// TestWildIsKyvernosWildcardMatch evaluates wild(p, s), the CEL of
// Kyverno's wildcard.Match on two strings computed at admission, on
// generated pairs (each pattern against random strings and against
// strings it is written to match) and compares it with wildcard.Match.
func TestWildIsKyvernosWildcardMatch(t *testing.T) {
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	expr := wild("object.p", "object.s")
	res := cc.CompileCELExpression(boolExpr(expr), plugincel.OptionalVariableDeclarations{}, environment.NewExpressions)
	require.Nil(t, res.Error, expr)
	rng := rand.New(rand.NewSource(7))
	word := func(max int) string {
		var b strings.Builder
		for n := rng.Intn(max + 1); n > 0; n-- {
			b.WriteRune(wildRunes[rng.Intn(len(wildRunes))])
		}
		return b.String()
	}
	// matching writes a string p matches (a wildcard replaced by text).
	matching := func(p string) string {
		var b strings.Builder
		for _, r := range p {
			switch r {
			case '*':
				b.WriteString(word(2))
			case '?':
				b.WriteRune(wildRunes[rng.Intn(len(wildRunes))])
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	pairs := [][2]string{{`\E`, `\E`}, {`\E*`, `\Ex`}, {`a\`, `a\`}, {`a\*`, `a\b`}, {`\\E?`, `\\Ex`}, {`\Q*\E`, `\Qx\E`}, {"*", ""}, {"?", ""}, {"", ""}}
	for i := 0; i < 4000; i++ {
		p := word(6)
		pairs = append(pairs, [2]string{p, word(6)}, [2]string{p, matching(p)})
	}
	matched := 0
	for _, pair := range pairs {
		p, s := pair[0], pair[1]
		want := wildcard.Match(p, s)
		out, _, err := res.Program.Eval(map[string]any{"object": map[string]any{"p": p, "s": s}})
		require.NoError(t, err, "wild(%q, %q)", p, s)
		require.Equal(t, want, out.Value(), "wild(%q, %q): Kyverno's wildcard.Match says %v", p, s, want)
		if want {
			matched++
		}
	}
	t.Logf("%d pairs, %d matched", len(pairs), matched)
	require.Greater(t, matched, len(pairs)/4, "the pairs must match often enough to test the regular expression")
}
