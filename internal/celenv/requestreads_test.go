package celenv

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/admitc/admitc/ir"
)

// TestRequestReads finds the reads of what only a request carries, and
// nothing in what a stored object has (the operation included: an audit
// judges it as a CREATE, and Kyverno's translated rules test it).
func TestRequestReads(t *testing.T) {
	for name, tc := range map[string]struct {
		expr string
		want []string
	}{
		"user":               {`request.userInfo.username == 'admin'`, []string{"request.userInfo"}},
		"user under has":     {`has(request.userInfo.groups) && 'x' in request.userInfo.groups`, []string{"request.userInfo"}},
		"authorizer":         {`authorizer.group('').resource('pods').check('create').allowed()`, []string{"authorizer"}},
		"dry run and uid":    {`request.dryRun || request.uid == ''`, []string{"request.dryRun", "request.uid"}},
		"in a comprehension": {`object.spec.containers.all(c, c.name != request.userInfo.username)`, []string{"request.userInfo"}},
		"optional syntax":    {`object[?'spec'].orValue(null) != null && request.options.dryRun == ['All']`, []string{"request.options"}},
		"operation":          {`request.operation == 'UPDATE' ? oldObject.x == object.x : true`, nil},
		"object only":        {`object.metadata.name.startsWith('a') && request.namespace == 'shop'`, nil},
		"does not parse":     {`object.(`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			p := &ir.Policy{Validations: []ir.Validation{{Expression: tc.expr, Origin: ir.Origin{File: "p.yaml", Line: 3, Column: 7}}}}
			var got []string
			for _, r := range RequestReads(p) {
				got = append(got, r.What)
				assert.Equal(t, 3, r.Origin.Line)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRequestReadsLeavesMessagesOut: a message does not change a verdict.
func TestRequestReadsLeavesMessagesOut(t *testing.T) {
	p := &ir.Policy{
		Variables:        []ir.NamedExpression{{Name: "who", Expression: "request.userInfo.username"}},
		MatchConditions:  []ir.NamedExpression{{Name: "dry", Expression: "!request.dryRun"}},
		Validations:      []ir.Validation{{Expression: "true", MessageExpression: "request.userInfo.username"}},
		AuditAnnotations: []ir.AuditAnnotation{{Key: "k", ValueExpression: "request.uid"}},
	}
	var got []string
	for _, r := range RequestReads(p) {
		got = append(got, r.What)
	}
	assert.Equal(t, []string{"request.userInfo", "request.dryRun"}, got)
}
