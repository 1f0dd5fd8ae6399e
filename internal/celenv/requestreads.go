package celenv

import (
	"sync"

	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/parser"

	"github.com/admitc/admitc/ir"
)

// RequestRead is one read, in a policy's CEL, of what only an admission
// request carries and a stored object does not: who sent it and what they
// may do (request.userInfo, authorizer), whether it is a dry run
// (request.dryRun), its options and uid. A judgement of a stored object has
// no value for them (admitc audit reports such a policy as skipped, as
// Kyverno's background scans leave rules that read request.userInfo to
// admission).
type RequestRead struct {
	// What is the expression read: "request.userInfo", "authorizer", ...
	What string
	// Name is the variable's or match condition's name; empty for a
	// validation.
	Name   string
	Origin ir.Origin
}

// requestFields are the fields of "request" that only a request has. The
// operation is not one of them: a stored object is judged as a CREATE (an
// UPDATE for a policy that matches only UPDATE), a value it does have.
var requestFields = map[string]bool{
	"userInfo": true, "dryRun": true, "options": true, "uid": true,
	// Kyverno's request variables that name the user's roles.
	"roles": true, "clusterRoles": true,
}

// RequestReads lists where p's variables, match conditions and validations
// read what only a request carries (one entry per expression and read, in
// expression order). Messages and audit annotations are left out: they do
// not change a verdict. Expressions are parsed, not type-checked: the
// compiler has checked them already.
func RequestReads(p *ir.Policy) []RequestRead {
	var out []RequestRead
	add := func(name, text string, o ir.Origin) {
		for _, what := range requestReadsOf(text) {
			out = append(out, RequestRead{What: what, Name: name, Origin: o})
		}
	}
	for _, v := range p.Variables {
		add(v.Name, v.Expression, v.Origin)
	}
	for _, m := range p.MatchConditions {
		add(m.Name, m.Expression, m.Origin)
	}
	for _, v := range p.Validations {
		add("", v.Expression, v.Origin)
	}
	return out
}

// requestReadsOf parses text and returns what it reads of the request, in
// order of first appearance; nothing for text that does not parse.
func requestReadsOf(text string) []string {
	a, ok := parseForReads(text)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range celast.MatchDescendants(celast.NavigateAST(a), func(e celast.NavigableExpr) bool {
		return e.Kind() == celast.SelectKind || e.Kind() == celast.IdentKind
	}) {
		what := requestRead(n)
		if what != "" && !seen[what] {
			seen[what] = true
			out = append(out, what)
		}
	}
	return out
}

// requestRead names what n reads of the request, or "".
func requestRead(n celast.NavigableExpr) string {
	if n.Kind() == celast.IdentKind {
		if n.AsIdent() == "authorizer" {
			return "authorizer"
		}
		return ""
	}
	sel := n.AsSelect()
	if op := sel.Operand(); op.Kind() == celast.IdentKind && op.AsIdent() == "request" && requestFields[sel.FieldName()] {
		return "request." + sel.FieldName()
	}
	return ""
}

var (
	readParser     *parser.Parser
	readParserOnce sync.Once
)

// parseForReads parses text with the standard macros and optional syntax,
// as the API server's environment reads it.
func parseForReads(text string) (*celast.AST, bool) {
	readParserOnce.Do(func() {
		readParser, _ = parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true))
	})
	if readParser == nil {
		return nil, false
	}
	a, errs := readParser.Parse(common.NewTextSource(text))
	if len(errs.GetErrors()) > 0 {
		return nil, false
	}
	return a, true
}
