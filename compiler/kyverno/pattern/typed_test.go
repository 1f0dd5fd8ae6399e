package pattern

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/kubetyped"
)

// fixtureFile is one testdata file: rules in the style of published Kyverno
// policies and resources every rule is checked on.
type fixtureFile struct {
	Rules []struct {
		Name       string `json:"name"`
		Pattern    any    `json:"pattern"`
		AnyPattern []any  `json:"anyPattern"`
	} `json:"rules"`
	Resources []any `json:"resources"`
}

type rule struct {
	name       string
	pattern    any
	anyPattern []any
}

func loadFixtures(t *testing.T) ([]rule, []any) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	var rules []rule
	var resources []any
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var ff fixtureFile
		require.NoError(t, yaml.UnmarshalStrict(data, &ff), f)
		for _, r := range ff.Rules {
			rules = append(rules, rule{name: r.Name, pattern: r.Pattern, anyPattern: r.AnyPattern})
		}
		for _, r := range ff.Resources {
			resources = append(resources, intsAsInt64(r))
		}
	}
	return rules, resources
}

// TestTypedObjectsDecideAlike evaluates every fixture rule's translation on
// every fixture resource and generated variants of it (values of every
// type where the pattern looks) twice in admitc's CEL: on the object as
// kube-apiserver 1.36 presents it (cel-go's maps and lists) and as 1.37
// presents a built-in object (typed values whose equality with another
// kind of value is an error, package kubetyped). The outcomes must be the
// same: the emitted comparisons are type-safe.
func TestTypedObjectsDecideAlike(t *testing.T) {
	rules, resources := loadFixtures(t)
	compared, differ := 0, 0
	for ri, r := range rules {
		var e Expr
		var err error
		patterns := []any{r.pattern}
		if r.anyPattern != nil {
			e, err = TranslateAny(r.anyPattern, "object")
			patterns = r.anyPattern
		} else {
			e, err = Translate(r.pattern, "object")
		}
		require.NoError(t, err, r.name)
		eval := compileString(t, e.Result)
		gen := newVariantGen(int64(ri), patterns...)
		for _, base := range resources {
			for _, res := range append([]any{base}, gen.variants(base, 20)...) {
				compared++
				plain, perr := eval(res)
				typed, terr := eval(kubetyped.Value(res))
				if plain == typed && (perr == nil) == (terr == nil) {
					continue
				}
				differ++
				if differ <= 20 {
					doc, _ := json.Marshal(res)
					t.Errorf("rule %s: 1.36 %q %v, 1.37 %q %v\nresource: %s", r.name, plain, perr, typed, terr, doc)
				}
			}
		}
	}
	t.Logf("%d rules, %d comparisons, %d differ", len(rules), compared, differ)
}

// TestScalarPatternsOnMapsAndLists checks each scalar predicate on a map
// or a list where Kyverno expects a scalar: Kyverno fails the pattern
// there, and the translation must say so without an evaluation error on
// the object as kube-apiserver 1.36 and as 1.37 presents a built-in
// object (where `x == false` raises "no such overload" for a map x).
func TestScalarPatternsOnMapsAndLists(t *testing.T) {
	cases := map[string]struct{ pattern, object, want string }{
		"bool on a map":               {`{v: false}`, `{v: {a: 1}}`, "fail /v/"},
		"bool on a list of maps":      {`{v: true}`, `{v: [{a: 1}]}`, "fail /v/"},
		"null on a map":               {`{v: null}`, `{v: {a: 1}}`, "fail /v/"},
		"null on a list of lists":     {`{v: null}`, `{v: [[1]]}`, "fail /v/"},
		"int on a map":                {`{v: 5}`, `{v: {a: 5}}`, "fail /v/"},
		"float on a list of maps":     {`{v: 1.5}`, `{v: [{a: 1.5}]}`, "fail /v/"},
		"alternatives on a map":       {`{v: "A | B"}`, `{v: {a: A}}`, "fail /v/"},
		"string on a list of lists":   {`{v: "A"}`, `{v: [[A]]}`, "fail /v/"},
		"wildcard on a map":           {`{v: "?*"}`, `{v: {a: 1}}`, "fail /v/"},
		"duration on a map":           {`{v: "<5m"}`, `{v: {a: 1}}`, "fail /v/"},
		"quantity on a list of maps":  {`{v: ">1Gi"}`, `{v: [{a: 2Gi}]}`, "fail /v/"},
		"range on a map":              {`{v: "1-5"}`, `{v: {a: 3}}`, "fail /v/"},
		"equality anchor on a map":    {`{=(v): false}`, `{v: {a: 1}}`, "fail /v/"},
		"conditional anchor on a map": {`{(v): false, w: 1}`, `{v: {a: 1}, w: 2}`, "skip"},
		"bool still matches a bool":   {`{v: false}`, `{v: false}`, "pass"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := Translate(patternOf(t, tc.pattern), "object")
			require.NoError(t, err)
			eval := compileString(t, e.Result)
			obj := decode(t, tc.object)
			got, err := eval(obj)
			require.NoError(t, err, "1.36")
			assert.Equal(t, tc.want, got, "1.36")
			got, err = eval(kubetyped.Value(obj))
			require.NoError(t, err, "1.37")
			assert.Equal(t, tc.want, got, "1.37")
		})
	}
}
