package kyverno_test

import (
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/typed"
	"github.com/admitc/admitc/ir"
)

// The rules of the images fixtures are written against the schema: no
// kyvernoImages map, the references read per container under the
// imagesParse check, the exact form kept as Dynamic; container names are
// read as unique in each list, so a pod with two of one name is judged by
// the exact form offline.
func TestImagesRulesAreTyped(t *testing.T) {
	for _, fixture := range []string{"disallow-latest-tag-images", "restrict-image-registries-images"} {
		path := "../../examples/kyverno-pattern/" + fixture + "/policy.yaml"
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		set, diags := compiler.Compile([]compiler.Source{{Name: path, Data: data}}, compiler.Options{})
		require.Empty(t, diags.Error())
		require.Len(t, set.Policies, 6, fixture)
		for _, p := range set.Policies {
			names := []string{}
			for _, v := range p.Variables {
				names = append(names, v.Name)
			}
			assert.NotContains(t, names, conditions.ImagesVariable, p.Name)
			assert.Equal(t, []string{typed.ImagesVariable, typed.ImagesParseVariable}, names, p.Name)
			require.NotNil(t, p.Dynamic, p.Name)
			assert.Contains(t, p.Validations[0].Expression, "variables.imagesParse ?", p.Name)
			assert.True(t, slices.ContainsFunc(p.SchemaReads, func(r ir.SchemaRead) bool { return r.UniqueKey == "name" }), "%s: names read as unique", p.Name)
		}
	}
}
