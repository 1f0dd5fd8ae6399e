package dialect

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"

	"github.com/admitc/admitc/internal/celenv"
)

// A rewrite replaces nodes of a checked AST by text. The macros of the
// source are kept (the unparser prints a macro call from the source info
// when it meets an expanded node), so a node is replaced in the main tree
// and in every macro call that holds it, by a placeholder identifier whose
// text is substituted after unparsing.

// replacement is one node to replace: its text, in which the texts of args
// appear as {0}, {1}...
type replacement struct {
	id       int64
	template string
	args     []celast.Expr
}

// rewrite returns the text of a, rewritten for the API server; the
// original text when nothing changes.
func rewrite(a *cel.Ast) (string, error) {
	native := a.NativeRep()
	reps := replacements(native)
	if len(reps) == 0 {
		return a.Source().Content(), nil
	}
	info := native.SourceInfo()
	fac := celast.NewExprFactory()
	byID := map[int64]bool{}
	for _, r := range reps {
		byID[r.id] = true
	}
	trees := []celast.Expr{native.Expr()}
	for _, m := range info.MacroCalls() {
		trees = append(trees, m)
	}
	for _, t := range trees {
		for _, n := range celast.MatchDescendants(celast.NavigateExpr(native, t), func(e celast.NavigableExpr) bool { return byID[e.ID()] }) {
			n.SetKindCase(fac.NewIdent(n.ID(), placeholder(n.ID())))
		}
	}
	texts := map[string]string{}
	for _, r := range reps {
		info.ClearMacroCall(r.id)
	}
	for _, r := range reps {
		text := r.template
		for i, arg := range r.args {
			s, err := parser.Unparse(arg, info)
			if err != nil {
				return "", err
			}
			text = strings.ReplaceAll(text, fmt.Sprintf("{%d}", i), s)
		}
		texts[placeholder(r.id)] = text
	}
	out, err := parser.Unparse(native.Expr(), info)
	if err != nil {
		return "", err
	}
	return expand(out, texts), nil
}

func placeholder(id int64) string { return fmt.Sprintf("admitcRewrite%d", id) }

// expand substitutes placeholders until none is left (a replacement's
// text may hold the placeholders of nodes inside it).
func expand(s string, texts map[string]string) string {
	for changed := true; changed; {
		changed = false
		for p, t := range texts {
			if strings.Contains(s, p) {
				s = replaceIdent(s, p, t)
				changed = true
			}
		}
	}
	return s
}

// replaceIdent replaces the identifier p in s (not a longer identifier
// that starts with it).
func replaceIdent(s, p, t string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, p)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(p)
		if end < len(s) && isIdentChar(s[end]) {
			b.WriteString(s[:end])
			s = s[end:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(t)
		s = s[end:]
	}
}

func isIdentChar(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// replacements finds the nodes of a checked AST of Kyverno's dialect that
// the API server reads differently.
func replacements(a *celast.AST) []replacement {
	var out []replacement
	root := celast.NavigateAST(a)
	for _, n := range celast.MatchDescendants(root, celast.FunctionMatcher(celenv.OrValueCompatFunction)) {
		if r, ok := orValue(a, n); ok {
			out = append(out, r)
		}
	}
	for _, n := range celast.MatchDescendants(root, celast.FunctionMatcher("parseServiceAccount")) {
		if call := n.AsCall(); !call.IsMemberFunction() && len(call.Args()) == 1 {
			out = append(out, replacement{id: n.ID(), template: serviceAccountTemplate, args: call.Args()})
		}
	}
	for _, n := range celast.MatchDescendants(root, celast.KindMatcher(celast.SelectKind)) {
		if r, ok := kyvernoSelect(a, n); ok {
			out = append(out, r)
		}
	}
	return out
}

// orValue writes Kyverno's x.orValue(y) (__orValueCompat__(x, y): the
// value of an optional x, else y; x itself when it is not optional; an
// error of x or y is the call's error) for the API server, whose orValue
// has no overload for a value that is not optional.
func orValue(a *celast.AST, n celast.NavigableExpr) (replacement, bool) {
	call := n.AsCall()
	x, y := call.Args()[0], call.Args()[1]
	t := a.GetType(x.ID())
	if t.Kind() == types.OpaqueKind && t.TypeName() == types.OptionalType.TypeName() {
		// Optional by type: the API server's orValue means the same. The
		// macro call in the source info prints it as written.
		return replacement{}, false
	}
	concrete := "({0})"
	if !constant(y) {
		// y is evaluated, and its error propagated, even when x is used.
		concrete = "(type({1}) == type({1}) ? ({0}) : ({0}))"
	}
	if t.Kind() != types.DynKind && t.Kind() != types.AnyKind {
		// Statically a value that is not optional: the value itself.
		return replacement{id: n.ID(), template: concrete, args: []celast.Expr{x, y}}, true
	}
	// The API server has no cel.bind, so x is written twice; it is
	// evaluated twice, to the same value.
	tmpl := "(type({0}) == type(optional.none()) ? ({0}).orValue({1}) : " + concrete + ")"
	return replacement{id: n.ID(), template: tmpl, args: []celast.Expr{x, y}}, true
}

// constant says whether e is a literal or a list or map of literals: its
// evaluation cannot fail.
func constant(e celast.Expr) bool {
	switch e.Kind() {
	case celast.LiteralKind:
		return true
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			if !constant(el) {
				return false
			}
		}
		return true
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			if !constant(me.Key()) || !constant(me.Value()) {
				return false
			}
		}
		return true
	}
	return false
}

// kyvernoSelect writes Kyverno's request.object and request.oldObject as
// the API server's object and oldObject (the same objects), and
// exceptions.allowedImages and exceptions.allowedValues as empty lists
// (admitc reads no PolicyExceptions).
func kyvernoSelect(a *celast.AST, n celast.NavigableExpr) (replacement, bool) {
	sel := n.AsSelect()
	op := sel.Operand()
	if op.Kind() != celast.IdentKind || sel.IsTestOnly() {
		return replacement{}, false
	}
	switch typ := a.GetType(op.ID()).TypeName(); {
	case op.AsIdent() == "request" && typ == celenv.KyvernoRequestTypeName && (sel.FieldName() == "object" || sel.FieldName() == "oldObject"):
		return replacement{id: n.ID(), template: sel.FieldName()}, true
	case op.AsIdent() == celenv.ExceptionsVar && typ == celenv.ExceptionsTypeName:
		return replacement{id: n.ID(), template: "dyn([])"}, true
	}
	return replacement{}, false
}

// serviceAccountTemplate is Kyverno's parseServiceAccount (sdk libs/user:
// after the prefix system:serviceaccount:, the namespace before the first
// ':' and the name after it; both empty otherwise) as a map with the
// fields of its ServiceAccount type, in the API server's string library.
const serviceAccountTemplate = `({"Namespace": ({0}.startsWith("system:serviceaccount:") && {0}.substring(22).contains(":") ? {0}.substring(22).substring(0, {0}.substring(22).indexOf(":")) : ""), ` +
	`"Name": ({0}.startsWith("system:serviceaccount:") && {0}.substring(22).contains(":") ? {0}.substring(22).substring({0}.substring(22).indexOf(":") + 1) : "")})`
