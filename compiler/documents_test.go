package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/ir"
)

func compileText(t *testing.T, name, text string) ([]string, string) {
	t.Helper()
	set, diags := Compile([]Source{{Name: name, Data: []byte(text)}}, Options{})
	if len(diags) > 0 {
		return nil, diags.Error()
	}
	var names []string
	for _, p := range set.Policies {
		names = append(names, p.Name)
	}
	return names, ""
}

func TestEveryDocumentIsRead(t *testing.T) {
	cases := map[string]struct {
		text string
		want []string
	}{
		"yaml stream": {
			text: "policies:\n- {name: a, type: memory-limit}\n---\npolicies:\n- {name: b, type: disallow-privileged}\n",
			want: []string{"a", "b"},
		},
		"yaml stream with empty documents and comments": {
			text: "---\n# nothing here\n---\npolicies:\n- {name: a, type: memory-limit}\n---\n",
			want: []string{"a"},
		},
		"json values back to back": {
			text: `{"policies": [{"name": "a", "type": "memory-limit"}]}` + "\n" + `{"policies": [{"name": "b", "type": "disallow-privileged"}]}`,
			want: []string{"a", "b"},
		},
		"json values on one line": {
			text: `{"policies": [{"name": "a", "type": "memory-limit"}]}{"policies": [{"name": "b", "type": "disallow-privileged"}]}`,
			want: []string{"a", "b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := compileText(t, "p.yaml", tc.text)
			require.Empty(t, errs)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTrailingContentIsAnError(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"json garbage": {
			text: "{\"policies\": [{\"name\": \"a\", \"type\": \"memory-limit\"}]}\n  oops",
			want: "p.json:2:3: not valid JSON: invalid character 'o' looking for beginning of value; a policy file holds JSON values or YAML documents (separated by ---), nothing else",
		},
		"yaml scalar document": {
			text: "policies:\n- {name: a, type: memory-limit}\n---\njust words\n",
			want: "p.json:4:1: a policy file must be an object, got a str",
		},
		"position in a later json value": {
			text: "{\"policies\": []}\n{\"policies\": [{\"name\": \"a\", \"type\": \"nope\"}]}",
			want: `p.json:2:37: policies[0].type: unknown policy type "nope"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := compileText(t, "p.json", tc.text)
			assert.True(t, strings.HasPrefix(errs, tc.want), errs)
		})
	}
}

func TestPolicyFileSizeIsBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxPolicyFileBytes+1), 0o644))
	_, err := ReadSources([]string{big})
	require.Error(t, err)
	assert.Equal(t, "policy file "+big+" is larger than 16 MiB: split it into several files", err.Error())
}

func TestEveryCELErrorIsReported(t *testing.T) {
	text := `policies:
- name: a
  type: cel
  validations:
  - expression: "object.nope("
- name: b
  type: cel
  validations:
  - expression: "variables.missing == 1"
`
	_, errs := compileText(t, "p.yaml", text)
	assert.Contains(t, errs, "p.yaml:5:")
	assert.Contains(t, errs, "p.yaml:9:")
	assert.Contains(t, errs, "undefined field 'missing'")
}

func TestAliasesAndMergeKeys(t *testing.T) {
	text := `base: &base
  type: cel
  failurePolicy: Ignore
  validations:
  - expression: "true"
policies:
- <<: *base
  name: a
- <<: *base
  name: b
  failurePolicy: Fail
`
	// The top-level "base" key is not a policy file field: it must be the
	// only complaint, once.
	_, errs := compileText(t, "p.yaml", text)
	assert.Equal(t, `p.yaml:1:1: base: unknown field "base" in a policy file (known fields: policies)`, errs)

	set, diags := Compile([]Source{{Name: "p.yaml", Data: []byte(`
policies:
- &a
  name: a
  type: cel
  failurePolicy: Ignore
  validations: &v
  - expression: "true"
- <<: *a
  name: b
  failurePolicy: Fail
- name: c
  type: cel
  validations: *v
`)}}, Options{})
	require.Empty(t, diags.Error())
	byName := map[string]ir.Policy{}
	for _, p := range set.Policies {
		byName[p.Name] = p
	}
	assert.Equal(t, ir.Ignore, byName["a"].FailurePolicy)
	assert.Equal(t, ir.Fail, byName["b"].FailurePolicy)
	assert.Equal(t, "true", byName["c"].Validations[0].Expression)
}

func TestAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	_, errs := compileText(t, "bomb.yaml", b.String())
	assert.Equal(t, "bomb.yaml:1:1: YAML aliases expand this document to more than 1048576 nodes; write the values out instead", errs)
}

func TestLongSourceLinesAreCut(t *testing.T) {
	expr := strings.Repeat("1 + ", 20000) + "object.nope("
	_, errs := compileText(t, "p.json", `{"policies": [{"name": "a", "type": "cel", "validations": [{"expression": "`+expr+`"}]}]}`)
	require.NotEmpty(t, errs)
	assert.Less(t, len(errs), 2000, "a diagnostic must not echo the whole line")
	lines := strings.Split(errs, "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	caret := strings.Index(lines[2], "^")
	require.Positive(t, caret)
	assert.Contains(t, lines[1][caret-10:min(len(lines[1]), caret+5)], "nope(")
}
