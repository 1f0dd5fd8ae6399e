package compiler

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/ir"
)

// kyvernoFixtureGlobs are the policy files of the repository's fixtures
// that hold Kyverno policies.
var kyvernoFixtureGlobs = []string{
	"../examples/*/*/policy.yaml",
	"../golden/*/policy.yaml",
	"../internal/verify/testdata/*/policy.yaml",
	"../internal/cli/testdata/verify/*/policy.yaml",
	"../internal/cli/testdata/verify/*/*/policy.yaml",
}

// A {{ }} variable Kyverno substitutes must never reach emitted CEL as
// text (a patch would write it into the object, a check would compare
// with it): every mutation, validation, variable, match condition and
// audit annotation of every fixture's translation is free of "{{". The
// exception is a message: Kyverno leaves a message whose variable does not
// resolve as written, and so does the translation, inside one string
// literal of the message expression.
func TestNoKyvernoVariableIsEmittedAsText(t *testing.T) {
	var files []string
	for _, g := range kyvernoFixtureGlobs {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		files = append(files, m...)
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if !strings.Contains(string(data), "kyverno.io/") || !strings.Contains(string(data), "{{") {
			continue
		}
		set, diags := Compile([]Source{{Name: f, Data: data}}, Options{KeepGoing: true})
		if set == nil {
			continue // a fixture of refusals: nothing is emitted
		}
		require.Empty(t, diags, f)
		for _, p := range set.Policies {
			for where, e := range emittedCEL(p) {
				assert.NotContains(t, e, "{{", "%s: policy %s, %s", f, p.Name, where)
				checked++
			}
		}
	}
	assert.Greater(t, checked, 200)
}

// messageLiteral is a CEL string literal holding a message as written.
var messageLiteral = regexp.MustCompile(`'(?:[^'\\]|\\.)*'`)

// emittedCEL is every CEL text of p by where it is; a message expression
// without its string literals.
func emittedCEL(p ir.Policy) map[string]string {
	out := map[string]string{}
	for i, m := range p.Mutations {
		out["mutations["+strconv.Itoa(i)+"]"] = m.Expression
	}
	for i, v := range p.Validations {
		out["validations["+strconv.Itoa(i)+"].expression"] = v.Expression
		out["validations["+strconv.Itoa(i)+"].messageExpression"] = messageLiteral.ReplaceAllString(v.MessageExpression, "''")
	}
	for _, n := range p.Variables {
		out["variables."+n.Name] = n.Expression
	}
	for _, n := range p.MatchConditions {
		out["matchConditions."+n.Name] = n.Expression
	}
	for _, a := range p.AuditAnnotations {
		out["auditAnnotations."+a.Key] = a.ValueExpression
	}
	return out
}
