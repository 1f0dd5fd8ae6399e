package verify

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Kyverno v1.19's CLI loads a test file in the legacy schema and then
// refuses it (deprecations.CheckTest), failing the run; a legacy result
// row with `resource` or `status` does not even decode (UnmarshalStrict).
// verify reports both as errors instead of ignoring the file.
func TestKyvernoLegacyTestFilesAreErrors(t *testing.T) {
	cases := map[string]struct {
		test string
		want Result
	}{
		"legacy schema": {
			test: "name: legacy\npolicies: [policy.yaml]\nresources: [resources.yaml]\nresults:\n- policy: p\n  rule: r\n  resources: [web]\n  kind: Pod\n  result: pass\n",
			want: Result{Test: "legacy", Outcome: Error, Reason: DeprecatedSchemaReason},
		},
		"current schema with a top-level name": {
			test: "apiVersion: cli.kyverno.io/v1alpha1\nkind: Test\nname: named\npolicies: [policy.yaml]\nresources: [resources.yaml]\nresults: []\n",
			want: Result{Test: "named", Outcome: Error, Reason: DeprecatedSchemaReason},
		},
		"legacy result row": {
			test: "name: legacy\npolicies: [policy.yaml]\nresources: [resources.yaml]\nresults:\n- policy: p\n  rule: r\n  resource: web\n  kind: Pod\n  status: pass\n",
			want: Result{Outcome: Error, Reason: `malformed Kyverno test: error unmarshaling JSON: while decoding JSON: json: unknown field "resource"`},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "kyverno-test.yaml")
			require.NoError(t, os.WriteFile(file, []byte(c.test), 0o600))
			rep, err := Run(context.Background(), []string{dir}, Options{Formats: []Format{Gator{}, Kyverno{}}})
			require.NoError(t, err)
			c.want.File = file
			assert.Equal(t, []Result{c.want}, rep.Results)
		})
	}
}

func TestKyvernoClaimsTestsOnly(t *testing.T) {
	assert.True(t, Kyverno{}.Claims("k.yaml", []byte("kind: Test\napiVersion: cli.kyverno.io/v1alpha1\n")))
	assert.True(t, Kyverno{}.Claims("k.yaml", []byte("name: legacy\npolicies: [p.yaml]\nresults: []\n")))
	assert.False(t, Kyverno{}.Claims("p.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n")))
	assert.False(t, Kyverno{}.Claims("v.yaml", []byte("policies: [{name: p}]\nglobalValues: {}\n")))
}
