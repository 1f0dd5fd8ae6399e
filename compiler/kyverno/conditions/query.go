package conditions

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	gojmespath "github.com/kyverno/go-jmespath"

	"github.com/admitc/admitc/internal/celenv"
)

// Scope says what the names of a foreach element mean in CEL: Element and
// ElementIndex are CEL expressions ("" outside a foreach).
type Scope struct {
	Element      string
	ElementIndex string
	// Loops are the foreach loops the query is inside, outermost first:
	// element0 and elementIndex0 read Loops[0], and so on (Element and
	// ElementIndex are the innermost loop's).
	Loops []Loop
	// Object, OldObject and Operation are what request.object,
	// request.oldObject and request.operation read; empty means the
	// admission request's (request.object reads the old object on DELETE).
	Object, OldObject, Operation string
	// Raw makes request.object read the request's object as it is (null on
	// DELETE) when Object is empty: Kyverno's queries on its context
	// outside a {{ }} substitution (a foreach list, a context variable's
	// jmesPath) do not rewrite it to the old object.
	Raw bool
	// Capture makes a key missing on the query's strict path (Kyverno's
	// "Unknown key" error) give the value UnknownKey instead of failing
	// evaluation, for the places where Kyverno handles that error (a
	// foreach list skips its entry, a foreach precondition its element);
	// functions, whose other errors CEL cannot catch, are refused there.
	Capture bool

	// Context are the rule's context variables, in the rule's order.
	Context []Variable
	// ContextVariables, when set, is the prefix of the policy variables
	// that hold the context variables ("variables.kyvernoContext_"; see
	// VariableExpression): a query read at rule level, without Capture,
	// reads them there instead of computing them inline (match conditions
	// cannot read policy variables).
	ContextVariables string

	// keys are the CEL texts of the inner variables of a nested {{ }}
	// variable, by placeholder; bareKeys says which placeholders are bare
	// identifiers in the query (the others are quoted).
	keys     map[string]string
	bareKeys map[string]bool
	// rawKeys says which placeholders stand inside a raw string literal
	// ('{{ x }}-suffix'): the literal is the text with the inner
	// variable's text spliced in.
	rawKeys map[string]bool
	// written is the text of each inner variable as the policy writes it
	// ({{ request.namespace }}), by placeholder: refusals quote a query as
	// written, never with admitc's placeholders.
	written map[string]string
}

// Loop is one foreach loop's element and index, as CEL expressions.
type Loop struct{ Element, Index string }

// UnknownKey is the CEL value of a query that Kyverno fails with
// "Unknown key" under Scope.Capture: bytes, which no JSON value is.
const UnknownKey = "dyn(b'kyverno: unknown key')"

// IsUnknownKey is a CEL test of the value named v for UnknownKey.
func IsUnknownKey(v string) string { return "type(" + v + ") == bytes" }

// rewriteOrKeep is what a policy can do about a construct admitc does not
// translate.
const rewriteOrKeep = "rewrite it with the JMESPath subset admitc translates (docs/kyverno-pattern-translation.md), or keep the rule under Kyverno"

// translator lowers one JMESPath query.
type translator struct {
	scope Scope
	query string
	fresh *int
	// vars name the CEL variables that hold the context variables the
	// query loads (withLoads binds them).
	vars map[string]string
}

// value is a lowered node: CEL text, or a pseudo value naming a part of
// Kyverno's context that only a field of it can make concrete ("request").
type value struct {
	cel    string
	pseudo string
}

// Query translates the JMESPath query q into a CEL expression of its value
// in Kyverno's context, with Kyverno's errors (a key missing from a map
// fails evaluation).
func Query(q string, s Scope, fresh *int) (string, error) {
	node, err := gojmespath.NewParser().Parse(q)
	if err != nil {
		return "", fmt.Errorf("JMESPath %q does not parse: %v; correct the query", asWritten(q, s.written), err)
	}
	loads := s.loads(q)
	t := &translator{scope: s, query: q, fresh: fresh, vars: map[string]string{}}
	for _, i := range loads {
		t.vars[s.Context[i].Name] = t.name()
	}
	v, err := t.node(node, value{pseudo: "$"}, true)
	if err != nil {
		return "", err
	}
	if v.pseudo != "" {
		return "", t.refuse("%s is not a value admitc reads; read one of its fields (request.object, request.operation...)", pseudoName(v.pseudo))
	}
	return withLoads(v.cel, s, loads, t.vars, fresh)
}

// QueryOn translates the JMESPath query q applied to the value of the CEL
// expression root rather than to Kyverno's context (a context variable's
// jmesPath on its value), with the same errors as Query.
func QueryOn(q, root string, s Scope, fresh *int) (string, error) {
	node, err := gojmespath.NewParser().Parse(q)
	if err != nil {
		return "", fmt.Errorf("JMESPath %q does not parse: %v; correct the query", asWritten(q, s.written), err)
	}
	t := &translator{scope: s, query: q, fresh: fresh}
	return t.concrete(node, value{cel: root}, true)
}

func pseudoName(p string) string {
	if p == "$" {
		return "the context"
	}
	return p
}

// refuse says why the query, quoted as the policy writes it, is not
// translated.
func (t *translator) refuse(format string, args ...any) error {
	return fmt.Errorf("JMESPath %q: %s", asWritten(t.query, t.scope.written), fmt.Sprintf(format, args...))
}

func (t *translator) name() string {
	n := "x" + strconv.Itoa(*t.fresh)
	*t.fresh++
	return n
}

// node lowers n applied to cur; strict says a key missing from a map
// fails evaluation (Kyverno's NotFoundError reaching the query's result)
// rather than giving null (where Kyverno's interpreter swallows it).
func (t *translator) node(n gojmespath.ASTNode, cur value, strict bool) (value, error) {
	switch n.NodeType {
	case gojmespath.ASTField:
		return t.field(cur, n.Value.(string), strict)
	case gojmespath.ASTSubexpression, gojmespath.ASTIndexExpression:
		if !strict && n.Children[1].NodeType == gojmespath.ASTFunctionExpression {
			return t.functionAfter(n.Children[0], n.Children[1], cur)
		}
		left, err := t.node(n.Children[0], cur, strict)
		if err != nil {
			return value{}, err
		}
		switch n.Children[0].NodeType {
		case gojmespath.ASTNotExpression, gojmespath.ASTComparator, gojmespath.ASTLiteral:
			// A boolean or literal on the left ((!a).b, as the fork's binding
			// powers read !a.b): CEL needs it as dyn to select from it.
			left.cel = "dyn(" + left.cel + ")"
		}
		if !t.scope.Capture || !strict || left.pseudo != "" {
			return t.node(n.Children[1], left, strict)
		}
		l := t.name()
		right, err := t.concrete(n.Children[1], value{cel: l}, strict)
		if err != nil {
			return value{}, err
		}
		return value{cel: bind(l, "dyn("+left.cel+")", IsUnknownKey(l)+" ? "+l+" : "+right)}, nil
	case gojmespath.ASTCurrentNode, gojmespath.ASTIdentity:
		return cur, nil
	case gojmespath.ASTLiteral:
		if text, ok := n.Value.(string); ok && placeholderRegex.MatchString(text) {
			return t.splicedLiteral(text)
		}
		lit, err := literal(n.Value)
		if err != nil {
			return value{}, t.refuse("%v; %s", err, rewriteOrKeep)
		}
		return value{cel: lit}, nil
	}
	if cur.pseudo != "" && n.NodeType == gojmespath.ASTIndex {
		return value{}, t.refuse("an index applied to %s is not in the subset admitc translates; %s", pseudoName(cur.pseudo), rewriteOrKeep)
	}
	c, err := t.compound(n, cur, strict)
	return value{cel: c}, err
}

// compound lowers the nodes that compute a new value.
func (t *translator) compound(n gojmespath.ASTNode, cur value, strict bool) (string, error) {
	switch n.NodeType {
	case gojmespath.ASTIndex:
		return t.index(cur.cel, n.Value.(int)), nil
	case gojmespath.ASTProjection, gojmespath.ASTFilterProjection:
		return t.projection(n, cur)
	case gojmespath.ASTFlatten:
		return t.flatten(n, cur)
	case gojmespath.ASTValueProjection:
		return t.valueProjection(n, cur)
	case gojmespath.ASTOrExpression:
		return t.or(n, cur)
	case gojmespath.ASTAndExpression:
		left, err := t.concrete(n.Children[0], cur, false)
		if err != nil {
			return "", err
		}
		right, err := t.concrete(n.Children[1], cur, strict)
		if err != nil {
			return "", err
		}
		l := t.name()
		return bind(l, "dyn("+left+")", isFalse(l)+" ? "+l+" : dyn("+right+")"), nil
	case gojmespath.ASTNotExpression:
		e, err := t.concrete(n.Children[0], cur, false)
		if err != nil {
			return "", err
		}
		v := t.name()
		return bind(v, "dyn("+e+")", isFalse(v)), nil
	case gojmespath.ASTComparator:
		return t.comparator(n, cur)
	case gojmespath.ASTPipe:
		left, err := t.node(n.Children[0], cur, false)
		if err != nil {
			return "", err
		}
		right, err := t.node(n.Children[1], left, false)
		if err != nil {
			return "", err
		}
		if right.pseudo != "" {
			return "", t.refuse("%s is not a value admitc reads; read one of its fields (request.object, request.operation...)", pseudoName(right.pseudo))
		}
		return right.cel, nil
	case gojmespath.ASTFunctionExpression:
		return t.function(n, cur)
	case gojmespath.ASTMultiSelectList:
		return t.multiSelectList(n, cur)
	case gojmespath.ASTMultiSelectHash:
		return t.multiSelectHash(n, cur)
	case gojmespath.ASTSlice:
		return t.slice(n, cur)
	}
	return "", t.refuse("%s is not in the subset admitc translates; %s", nodeName(n), rewriteOrKeep)
}

// functionAfter lowers a sub-expression whose right side is a function
// (args.contains(@, 'x')) where Kyverno swallows a missing key: the fork's
// sub-expression returns the left side's "Unknown key" error without
// calling the function, and the error then becomes null; a left side that
// is present (null included) is passed to the function.
func (t *translator) functionAfter(leftNode, fn gojmespath.ASTNode, cur value) (value, error) {
	captured := *t
	captured.scope.Capture = true
	left, err := captured.node(leftNode, cur, true)
	if err != nil {
		return value{}, err
	}
	if left.pseudo != "" {
		return t.node(fn, left, false)
	}
	l := t.name()
	right, err := t.concrete(fn, value{cel: l}, false)
	if err != nil {
		return value{}, err
	}
	return value{cel: bind(l, "dyn("+left.cel+")", IsUnknownKey(l)+" ? null : dyn("+right+")")}, nil
}

// concrete lowers n and requires a CEL value.
func (t *translator) concrete(n gojmespath.ASTNode, cur value, strict bool) (string, error) {
	v, err := t.node(n, cur, strict)
	if err != nil {
		return "", err
	}
	if v.pseudo != "" {
		return "", t.refuse("%s is not a value admitc reads; read one of its fields (request.object, request.operation...)", pseudoName(v.pseudo))
	}
	return v.cel, nil
}

func nodeName(n gojmespath.ASTNode) string {
	switch n.NodeType {
	case gojmespath.ASTSlice:
		return "a slice"
	case gojmespath.ASTMultiSelectList:
		return "a multi-select list"
	case gojmespath.ASTMultiSelectHash:
		return "a multi-select hash"
	case gojmespath.ASTExpRef:
		return "an expression reference (&)"
	}
	return strings.TrimPrefix(n.NodeType.String(), "AST")
}

// field is Kyverno's ASTField on cur: the key of a map (missing: an error
// when strict, else null), null on anything else; on the context, the
// roots admitc knows.
func (t *translator) field(cur value, key string, strict bool) (value, error) {
	if placeholderRegex.MatchString(key) {
		return t.dynamicField(cur, key, strict)
	}
	if cur.pseudo != "" {
		return t.rootField(cur.pseudo, key, strict)
	}
	v := t.name()
	missing := "null"
	if strict && t.scope.Capture {
		return value{cel: bind(v, cur.cel, "type("+v+") == map ? ("+quote(key)+" in "+v+" ? "+v+"["+quote(key)+"] : "+UnknownKey+") : null")}, nil
	}
	if strict {
		return value{cel: bind(v, cur.cel, "type("+v+") == map ? "+v+"["+quote(key)+"] : null")}, nil
	}
	return value{cel: bind(v, cur.cel, "type("+v+") == map && "+quote(key)+" in "+v+" ? "+v+"["+quote(key)+"] : "+missing)}, nil
}

// dynamicField is field with a key made by nested variables: the text of
// key with each placeholder replaced by its variable's text. A bare
// identifier must lex as one once substituted, and a quoted one must not
// need escapes, or Kyverno's query does not parse.
func (t *translator) dynamicField(cur value, key string, strict bool) (value, error) {
	if cur.pseudo != "" {
		return value{}, t.refuse("a {{ }} variable inside another naming a field of %s is not translated; %s", pseudoName(cur.pseudo), rewriteOrKeep)
	}
	var parts []string
	bare := false
	last := 0
	for _, loc := range placeholderRegex.FindAllStringIndex(key, -1) {
		p := key[loc[0]:loc[1]]
		text, ok := t.scope.keys[p]
		if !ok {
			return value{}, t.refuse("%s is not a variable", asWritten(p, t.scope.written))
		}
		bare = bare || t.scope.bareKeys[p]
		if loc[0] > last {
			parts = append(parts, quote(key[last:loc[0]]))
		}
		parts = append(parts, text)
		last = loc[1]
	}
	if last < len(key) {
		parts = append(parts, quote(key[last:]))
	}
	k, v := t.name(), t.name()
	valid := "!" + k + ".contains('\"') && !" + k + ".contains('\\\\')"
	if bare {
		valid = k + ".matches('^[A-Za-z_][A-Za-z0-9_]*$')"
	}
	lookup := "type(" + v + ") == map ? (" + k + " in " + v + " ? " + v + "[" + k + "] : null) : null"
	if strict {
		missing := raise("Unknown key in path")
		if t.scope.Capture {
			missing = UnknownKey
		}
		lookup = "type(" + v + ") == map ? (" + k + " in " + v + " ? " + v + "[" + k + "] : " + missing + ") : null"
	}
	body := "!(" + valid + ") ? " + raise("the substituted query does not parse") + " : " + lookup
	return value{cel: bind(k, strings.Join(parts, " + "), bind(v, cur.cel, body))}, nil
}

// rootField resolves the names of Kyverno's context that admitc reads.
func (t *translator) rootField(pseudo, key string, strict bool) (value, error) {
	unknown := func(k string) string {
		if strict && t.scope.Capture {
			return UnknownKey
		}
		if strict {
			return raise(`Unknown key "` + k + `" in path`)
		}
		return "null"
	}
	switch pseudo + "." + key {
	case "$.request":
		return value{pseudo: "request"}, nil
	case "$.element":
		if t.scope.Element != "" {
			return value{cel: t.scope.Element}, nil
		}
	case "$.elementIndex":
		if t.scope.ElementIndex != "" {
			return value{cel: t.scope.ElementIndex}, nil
		}
	case "$.images":
		// Kyverno's images variable: missing when the object has no image,
		// an error when Kyverno cannot extract them.
		im := t.name()
		failed := raise("failed to extract the images of the resource: a container without a string name, an image reference that does not parse, or a pod spec of the wrong type")
		if strict && t.scope.Capture {
			failed = UnknownKey
		}
		return value{cel: bind(im, ImagesReference, "type("+im+") == map ? "+im+" : "+im+" == null ? "+unknown("images")+" : "+failed)}, nil
	case "request.name":
		return value{cel: "(request.name != '' ? request.name : " + unknown("name") + ")"}, nil
	case "$.serviceAccountName", "$.serviceAccountNamespace":
		part := "1"
		if key == "serviceAccountNamespace" {
			part = "0"
		}
		u := "request.userInfo.username"
		return value{cel: "(size(" + u + ") <= 22 ? '' : " + bind("p", u+".substring(22).split(':')", "size(p) >= 2 ? p["+part+"] : ''") + ")"}, nil
	case "request.object":
		if t.scope.Object != "" {
			return value{cel: t.scope.Object}, nil
		}
		if t.scope.Raw {
			return value{cel: "object"}, nil
		}
		return value{cel: "(request.operation == 'DELETE' ? oldObject : object)"}, nil
	case "request.oldObject":
		if t.scope.OldObject != "" {
			return value{cel: t.scope.OldObject}, nil
		}
		return value{cel: "oldObject"}, nil
	case "request.operation":
		if t.scope.Operation != "" {
			return value{cel: t.scope.Operation}, nil
		}
		return value{cel: "request.operation"}, nil
	case "request.namespace":
		return value{cel: "request.namespace"}, nil
	case "request.userInfo":
		return value{pseudo: "request.userInfo"}, nil
	case "request.userInfo.username":
		return value{cel: "(request.userInfo.username != '' ? request.userInfo.username : " + unknown("username") + ")"}, nil
	case "request.userInfo.groups":
		return value{cel: "(size(request.userInfo.groups) > 0 ? request.userInfo.groups : " + unknown("groups") + ")"}, nil
	}
	if pseudo == "$" {
		if v, ok := t.loopName(key); ok {
			return v, nil
		}
		if n, ok := t.vars[key]; ok {
			return value{cel: n}, nil
		}
	}
	if pseudo != "$" {
		return value{}, t.refuse("%s.%s is a field of Kyverno's admission request that admitc does not translate (it translates request.object, request.oldObject, request.operation, request.namespace, request.name, request.userInfo.username and request.userInfo.groups); read what the rule needs from those, or keep the rule under Kyverno", pseudo, key)
	}
	return value{}, t.refuse("%s is neither declared in the rule's context before it is read nor a variable Kyverno provides that admitc translates (request, serviceAccountName, serviceAccountNamespace, images; element, elementIndex, elementN and elementIndexN inside a foreach): declare %s in the rule's context, before the entries that read it, or correct the name", key, key)
}

// loopName resolves elementN and elementIndexN, the element and index of
// the foreach loop at nesting N.
func (t *translator) loopName(key string) (value, bool) {
	for i, l := range t.scope.Loops {
		switch key {
		case "element" + strconv.Itoa(i):
			return value{cel: l.Element}, true
		case "elementIndex" + strconv.Itoa(i):
			return value{cel: l.Index}, true
		}
	}
	return value{}, false
}

// index is ASTIndex: the element at i (negative from the end) of a list,
// null when out of range or not a list.
func (t *translator) index(cur string, i int) string {
	v := t.name()
	at := strconv.Itoa(i)
	if i < 0 {
		at = "size(" + v + ") + (" + at + ")"
	}
	return bind(v, cur, "type("+v+") == list && "+at+" >= 0 && "+at+" < size("+v+") ? "+v+"["+at+"] : null")
}

// projection is ASTProjection and ASTFilterProjection: the left side
// (a missing key gives null), and if it is a list, the right side on each
// element (kept when the filter holds), nulls dropped.
func (t *translator) projection(n gojmespath.ASTNode, cur value) (string, error) {
	left, err := t.concrete(n.Children[0], cur, false)
	if err != nil {
		return "", err
	}
	l, e, r := t.name(), t.name(), t.name()
	right, err := t.concrete(n.Children[1], value{cel: e}, false)
	if err != nil {
		return "", err
	}
	list := l
	if n.NodeType == gojmespath.ASTFilterProjection {
		cond, err := t.concrete(n.Children[2], value{cel: e}, false)
		if err != nil {
			return "", err
		}
		c := t.name()
		list = l + ".filter(" + e + ", !" + bind(c, cond, isFalse(c)) + ")"
	}
	return bind(l, left, "type("+l+") == list ? dyn("+list+".map("+e+", "+right+").filter("+r+", "+r+" != null)) : null"), nil
}

// flatten is ASTFlatten: a list with its list elements spliced in.
func (t *translator) flatten(n gojmespath.ASTNode, cur value) (string, error) {
	left, err := t.concrete(n.Children[0], cur, false)
	if err != nil {
		return "", err
	}
	l, e := t.name(), t.name()
	return bind(l, left, "type("+l+") == list ? dyn("+l+".map("+e+", type("+e+") == list ? "+e+" : ["+e+"]).flatten()) : null"), nil
}

// valueProjection is ASTValueProjection (.*): the right side on each value
// of a map. Kyverno's order of the values is Go's map order; admitc keeps
// CEL's, so only an order-free use (length, contains, In operators) agrees.
func (t *translator) valueProjection(n gojmespath.ASTNode, cur value) (string, error) {
	left, err := t.concrete(n.Children[0], cur, false)
	if err != nil {
		return "", err
	}
	l, k, r := t.name(), t.name(), t.name()
	right, err := t.concrete(n.Children[1], value{cel: l + "[" + k + "]"}, false)
	if err != nil {
		return "", err
	}
	return bind(l, left, "type("+l+") == map ? dyn("+l+".map("+k+", "+right+").filter("+r+", "+r+" != null)) : null"), nil
}

// or is ASTOrExpression: the left side unless it is false-like, then the
// right side (missing keys give null on both).
func (t *translator) or(n gojmespath.ASTNode, cur value) (string, error) {
	left, err := t.concrete(n.Children[0], cur, false)
	if err != nil {
		return "", err
	}
	right, err := t.concrete(n.Children[1], cur, false)
	if err != nil {
		return "", err
	}
	l := t.name()
	return bind(l, "dyn("+left+")", isFalse(l)+" ? dyn("+right+") : "+l), nil
}

// comparator is ASTComparator: == and != as deep equality (values of
// different kinds are unequal, see kindEqual), ordering for two numbers
// only (else null).
func (t *translator) comparator(n gojmespath.ASTNode, cur value) (string, error) {
	left, err := t.concrete(n.Children[0], cur, false)
	if err != nil {
		return "", err
	}
	right, err := t.concrete(n.Children[1], cur, false)
	if err != nil {
		return "", err
	}
	ops := map[string]string{"tEQ": "==", "tNE": "!=", "tLT": "<", "tLTE": "<=", "tGT": ">", "tGTE": ">="}
	op, ok := ops[fmt.Sprint(n.Value)]
	if !ok {
		return "", t.refuse("the comparator %v is not translated; %s", n.Value, rewriteOrKeep)
	}
	l, r := t.name(), t.name()
	if op == "==" || op == "!=" {
		eq := kindEqual(l, r, n.Children[0].NodeType == gojmespath.ASTLiteral, n.Children[1].NodeType == gojmespath.ASTLiteral)
		if op == "!=" {
			eq = "!" + eq
		}
		return bind(l, "dyn("+left+")", bind(r, "dyn("+right+")", eq)), nil
	}
	return bind(l, left, bind(r, right, isNumber(l)+" && "+isNumber(r)+" ? dyn(double("+l+") "+op+" double("+r+")) : null")), nil
}

// kindEqual renders JMESPath's deep equality of the values named a and b
// (lit says which is a literal of the query) so that it never raises an
// evaluation error: values of different kinds (numbers are one kind) are
// unequal before CEL compares them, and a literal is the left operand, as
// CEL's == asks the left operand and a literal compares nested values of
// different kinds as unequal, where a map or list of a built-in object on
// kube-apiserver 1.37 raises "no such overload".
func kindEqual(a, b string, aLit, bLit bool) string {
	if bLit && !aLit {
		return celenv.EqualsSameKind(b, a)
	}
	return celenv.EqualsSameKind(a, b)
}

// jsonText is encoding/json's text of the value named v (Kyverno writes
// non-string values so): null, booleans, numbers whose shortest form CEL
// writes alike, and lists of those and of strings; maps, nested lists and
// other numbers raise an evaluation error.
func jsonText(v string) string {
	return "(" + isList(v) + " ? '[' + " + v + ".map(e, " + jsonScalar("e") + ").join(',') + ']' : " + jsonScalar(v) + ")"
}

func isList(v string) string { return "type(" + v + ") == list" }

// jsonScalar is encoding/json's text of a scalar, strings quoted with the
// standard library's escapes (HTML characters as \u00XX).
func jsonScalar(v string) string {
	str := quote(`"`) + " + " + v
	for _, r := range [][2]string{{`\`, `\\`}, {`"`, `\"`}, {"<", `\u003c`}, {">", `\u003e`}, {"&", `\u0026`}} {
		str += ".replace(" + quote(r[0]) + ", " + quote(r[1]) + ")"
	}
	str += " + " + quote(`"`)
	return "(" + v + " == null ? 'null' : type(" + v + ") == bool ? string(" + v + ") : " + isNumber(v) + " ? " + numberText(v, "JSON") +
		" : type(" + v + ") == string && !" + v + ".matches(" + quote(`[\x00-\x1f\x{2028}\x{2029}]`) + ") ? " + str + " : " + raise("admitc does not write this value as JSON text in CEL") + ")"
}

// numberText writes the number named v as Go writes a float64 (an integer
// below 1e6 in magnitude, or a fraction between 1e-4 and 1e6), and raises
// an error for other magnitudes, whose exponent forms differ.
func numberText(v, how string) string {
	d := "double(" + v + ")"
	return "(" + d + " > -1e6 && " + d + " < 1e6 && " + d + " == double(int(" + d + ")) ? string(int(" + d + ")) : " +
		"(" + d + " > -1e6 && " + d + " < 1e6 && (" + d + " >= 1e-4 || " + d + " <= -1e-4)) ? string(" + d + ") : " + raise("admitc does not write this number as Go's "+how+" text") + ")"
}

// literal renders a JMESPath literal (a raw string or decoded JSON).
// dynUnlessAlike is the CEL elements of a list or map literal: as they
// are when they are scalars of one JSON type (CEL types a literal by its
// elements, and list(string) is what CEL's own literals are), each as dyn
// otherwise (mixed types, null, lists, maps).
func dynUnlessAlike(cel []string, values []any) []string {
	alike := true
	for _, v := range values {
		switch v.(type) {
		case bool, string, float64, int, int64:
		default:
			alike = false
		}
		if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", values[0]) {
			alike = false
		}
	}
	if alike {
		return cel
	}
	out := make([]string, len(cel))
	for i, c := range cel {
		out[i] = "dyn(" + c + ")"
	}
	return out
}

// Literal is the CEL constant of v, a JSON value (numbers float64), as
// Kyverno's JSON context holds it.
func Literal(v any) (string, error) { return literal(v) }

func literal(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		return quote(x), nil
	case float64:
		return doubleLiteral(x), nil
	case int:
		return doubleLiteral(float64(x)), nil
	case int64:
		return doubleLiteral(float64(x)), nil
	case []any:
		var out []string
		for _, e := range x {
			s, err := literal(e)
			if err != nil {
				return "", err
			}
			out = append(out, s)
		}
		return "[" + strings.Join(dynUnlessAlike(out, x), ", ") + "]", nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		var values []any
		for _, k := range keys {
			s, err := literal(x[k])
			if err != nil {
				return "", err
			}
			out, values = append(out, s), append(values, x[k])
		}
		out = dynUnlessAlike(out, values)
		for i, k := range keys {
			out[i] = quote(k) + ": " + out[i]
		}
		return "{" + strings.Join(out, ", ") + "}", nil
	}
	return "", fmt.Errorf("a literal of type %T is not translated", v)
}

// multiSelectHash is ASTMultiSelectHash ({a: x, b: y}): null on null,
// else the map of each key to its expression on cur, a missing key giving
// null. Two pairs of one key are refused (the fork keeps the later one,
// having evaluated both).
func (t *translator) multiSelectHash(n gojmespath.ASTNode, cur value) (string, error) {
	if cur.pseudo != "" {
		return "", t.refuse("a multi-select hash applied to %s is not in the subset admitc translates; %s", pseudoName(cur.pseudo), rewriteOrKeep)
	}
	v := t.name()
	seen := map[string]bool{}
	var items []string
	for _, pair := range n.Children {
		key, _ := pair.Value.(string)
		if seen[key] {
			return "", t.refuse("the multi-select hash names the key %q twice; name each key once", key)
		}
		seen[key] = true
		e, err := t.concrete(pair.Children[0], value{cel: v}, false)
		if err != nil {
			return "", err
		}
		items = append(items, quote(key)+": dyn("+e+")")
	}
	return bind(v, "dyn("+cur.cel+")", v+" == null ? null : dyn({"+strings.Join(items, ", ")+"})"), nil
}

// slice is ASTSlice ([start:stop:step], constants, Python's rules as the
// fork's computeSliceParams and capSlice apply them): null on anything but
// a list; a step of 0 is the fork's error on a list. The elements are
// lists.range(count).map(k, list[start + k * step]), start and stop
// computed from the list's size (the list library of Kubernetes 1.34).
func (t *translator) slice(n gojmespath.ASTNode, cur value) (string, error) {
	if cur.pseudo != "" {
		return "", t.refuse("a slice applied to %s is not in the subset admitc translates; %s", pseudoName(cur.pseudo), rewriteOrKeep)
	}
	parts, _ := n.Value.([]*int)
	if len(parts) != 3 {
		return "", t.refuse("a slice of %d parts is not in the subset admitc translates; %s", len(parts), rewriteOrKeep)
	}
	v, size := t.name(), t.name()
	step := 1
	if parts[2] != nil {
		step = *parts[2]
	}
	if step == 0 {
		return bind(v, "dyn("+cur.cel+")", "dyn("+isList(v)+" ? "+raise("Invalid slice, step cannot be 0")+" : null)"), nil
	}
	// capped is capSlice(size, a, step) for the constant a.
	capped := func(a int) string {
		low, high := "0", size
		if step < 0 {
			low, high = "-1", size+" - 1"
		}
		if a < 0 {
			return fmt.Sprintf("(%s + %d < 0 ? %s : %s + %d)", size, a, low, size, a)
		}
		return fmt.Sprintf("(%d >= %s ? %s : %d)", a, size, high, a)
	}
	start, stop := "0", size
	if step < 0 {
		start, stop = size+" - 1", "-1"
	}
	if parts[0] != nil {
		start = capped(*parts[0])
	}
	if parts[1] != nil {
		stop = capped(*parts[1])
	}
	st, sp := t.name(), t.name()
	// count is how many indexes start, start+step, ... lie before stop.
	count := fmt.Sprintf("(%s > %s ? (%s - %s - 1) / %d + 1 : 0)", sp, st, sp, st, step)
	if step < 0 {
		count = fmt.Sprintf("(%s > %s ? (%s - %s - 1) / %d + 1 : 0)", st, sp, st, sp, -step)
	}
	k := t.name()
	body := fmt.Sprintf("dyn(lists.range(%s).map(%s, %s[%s + %s * %d]))", count, k, v, st, k, step)
	body = bind(size, "size("+v+")", bind(st, start, bind(sp, stop, body)))
	return bind(v, "dyn("+cur.cel+")", isList(v)+" ? "+body+" : null"), nil
}

// multiSelectList is ASTMultiSelectList ([a, b]): null on null, else the
// list of each expression on cur, a missing key giving null.
func (t *translator) multiSelectList(n gojmespath.ASTNode, cur value) (string, error) {
	if cur.pseudo != "" {
		return "", t.refuse("a multi-select list applied to %s is not in the subset admitc translates; %s", pseudoName(cur.pseudo), rewriteOrKeep)
	}
	v := t.name()
	var items []string
	for _, c := range n.Children {
		e, err := t.concrete(c, value{cel: v}, false)
		if err != nil {
			return "", err
		}
		items = append(items, "dyn("+e+")")
	}
	return bind(v, "dyn("+cur.cel+")", v+" == null ? null : dyn(["+strings.Join(items, ", ")+"])"), nil
}

// splicedLiteral is a raw string literal holding inner {{ }} variables
// ('^{{ request.namespace }}-'): Kyverno splices each one's text into the
// query before parsing it, so the literal is the text around them with
// their texts in between. A text holding ' or \ would end the literal or
// escape its quote there, changing the query: an evaluation error here.
func (t *translator) splicedLiteral(text string) (value, error) {
	var parts []string
	last := 0
	for _, loc := range placeholderRegex.FindAllStringIndex(text, -1) {
		p := text[loc[0]:loc[1]]
		inner, ok := t.scope.keys[p]
		if !ok || !t.scope.rawKeys[p] {
			return value{}, t.refuse("a {{ }} variable inside another is translated only where it names a field (a.\"{{ x }}\") or stands in a raw string ('{{ x }}'): %s; %s", asWritten(p, t.scope.written), rewriteOrKeep)
		}
		if loc[0] > last {
			parts = append(parts, quote(text[last:loc[0]]))
		}
		k := t.name()
		parts = append(parts, bind(k, inner, k+".contains(\"'\") || "+k+".contains('\\\\') ? "+raise("admitc does not splice a text holding ' or \\ into a JMESPath string")+" : "+k))
		last = loc[1]
	}
	if last < len(text) {
		parts = append(parts, quote(text[last:]))
	}
	return value{cel: "(" + strings.Join(parts, " + ") + ")"}, nil
}
