package typed

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	gojmespath "github.com/kyverno/go-jmespath"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// A condition's JMESPath query read against the schema: the subset the
// typed translation takes, with the semantics of Kyverno's go-jmespath
// fork as the exact translation (compiler/kyverno/conditions) lowers
// them, restricted to values shaped as the schema says. A field read on
// the query's strict path (not inside a projection, a function, `||`)
// is an error when missing, as CEL's field selection is; elsewhere a
// missing field is null. A projection drops the nulls its right side
// gives; `x[]` is the projection of x flattened, so a query such as
// spec.[initContainers, containers][].ports[].hostPort is the host
// ports of every container's ports, read as nested comprehensions.

// Roots are what a condition block's queries read.
type Roots struct {
	// Object is what request.object reads, of schema Node; nil when the
	// queries may not read it.
	Object celbuild.Expr
	Node   kubeschema.Node
	// Operation is what request.operation reads (a string).
	Operation celbuild.Expr
	// Element is what element reads in a foreach (nil outside one).
	Element *Root
	// ContextObject is what request.object reads in a context entry's own
	// jmesPath query, which Kyverno does not rewrite on DELETE as it does
	// {{ }} substitutions (there it is null); nil when that is not Object
	// (a policy that matches DELETE): such a query is not typed.
	ContextObject celbuild.Expr
	// Images is what Kyverno's images variable reads (nil: the queries
	// may not read it); a query that does is made to fail where Kyverno's
	// images fail.
	Images *Images
	// NoImages says Kyverno's images variable is missing: null.
	NoImages bool
	// NullContextObject says request.object reads null in a context
	// entry's own query (on DELETE).
	NullContextObject bool
	// OldElements says the foreach elements are the old object's, while
	// Kyverno's images are the object's: images.<list>."{{ element.name
	// }}" is the object's container of that name.
	OldElements bool
}

// Root is a value of a known schema: Path is its schema path for the
// reads ("" for the object, "spec.containers[]" for a container).
type Root struct {
	Expr celbuild.Expr
	Node kubeschema.Node
	Path string
	// Aliases are its other schema paths (an element of concatenated
	// lists is an element of each).
	Aliases []string
	// Known are the fields under it known to be present, as keyPaths
	// from it (a filter kept only the elements that have them; a foreach
	// entry's preconditions hold only where they are).
	Known []string
}

// keyPath is a path of keys from a root, as Root.Known holds it.
func keyPath(keys ...string) string { return strings.Join(keys, "\x00") }

type qkind int

const (
	qNull qkind = iota
	qLit
	qPath
	qScalar
	qList
	qMulti
	qPseudo
	// qMaybe is a computed value that is null where scalar.null holds (a
	// part of the image of a foreach element): only `|| literal` reads it.
	qMaybe
)

// qval is a query's value as the translation knows it.
type qval struct {
	kind   qkind
	lit    any
	path   *qpath
	scalar *qscalar
	list   *qlist
	multi  []qval
	pseudo string
	// multiBase is the value a multi-select list was applied to.
	multiBase *qpath
}

// qpath is a value read from a root through keys: present when every key
// is (a strict read errs instead), with `|| literal` its default.
type qpath struct {
	root celbuild.Expr
	node kubeschema.Node
	rp   string
	// aliases are the root's other schema paths: an element of
	// concatenated lists is an element of each.
	aliases []string
	// known are the keyPaths from the root known to be present (a filter
	// kept only the elements that have them).
	known []string
	// elem says the root is the foreach element.
	elem bool
	// params says the root is the ConfigMap a configMap context entry
	// reads (params): its reads are not the object's, and only its data
	// is read.
	params bool
	// nullableData says the path reads a ConfigMap's data strictly, in a
	// message: null, not an error, where the ConfigMap has no data
	// (Kyverno's loader writes data: null).
	nullableData bool
	keys         []string
	nodes        []kubeschema.Node
	always       []bool
	strict       bool
	// dflt, when hasDflt, is the `|| literal` that replaces a value that
	// is null or false-like.
	dflt    any
	hasDflt bool
	// plain says the value never holds a wildcard character: its schema
	// lists the values it may hold, none with one.
	plain bool
	// ascii says the value holds only ASCII characters (a label's value).
	ascii bool
	// jsonSafe says the value holds no character encoding/json escapes
	// (a DNS label, a label's value: letters, digits, '-', '_', '.').
	jsonSafe bool
}

// parent is the node of the value the last key was read from.
func (p *qpath) parent() kubeschema.Node {
	if len(p.nodes) < 2 {
		return p.node
	}
	return p.nodes[len(p.nodes)-2]
}

// qscalar is a computed value: never null.
type qscalar struct {
	expr  celbuild.Expr
	shape kubeschema.Shape
	// plain says the value never holds a wildcard character (an
	// operation), so it matches a value only as itself.
	plain bool
	// mayErr says computing it may fail (a function given null).
	mayErr bool
	// null, for a qMaybe value, holds where it is null.
	null celbuild.Expr
}

// qlist is a projection: the non-null values of elem for every element of
// the nested generators, null as a whole when null is (nil: never).
type qlist struct {
	gens []qgen
	elem qval
	null celbuild.Expr
	// optSrc is the first list as an optional chain or [] when null is
	// set: the list without its null.
	optSrc celbuild.Expr
	// mayErr says a filter may fail (a function given null).
	mayErr bool
	// loose, when set, is the first generator's filter without its
	// test that elem is not "" (a part of an image reference Kyverno
	// omits when empty): enough where the predicate decides "" as a
	// missing element is decided.
	loose celbuild.Expr
	// raises, when set, is where computing the list fails (its source
	// errs in CEL there too, where it is evaluated), with Kyverno's error
	// raisesText (as a condition's value: without the "failed to
	// substitute variables in condition value: " before it).
	raises     celbuild.Expr
	raisesText string
	// kept says an element its filters keep makes the list not null (an
	// images list is null when no container has an image): exists()
	// needs no test of null.
	kept bool
}

// qgen iterates v over src (in the enclosing generator's scope), keeping
// the elements filter holds for (nil: all).
type qgen struct {
	src    celbuild.Expr
	v      string
	filter celbuild.Expr
}

// shape is the schema shape of the value a path reads.
func (p *qpath) shape() kubeschema.Shape { return p.final().Shape() }

func (p *qpath) final() kubeschema.Node {
	if len(p.nodes) == 0 {
		return p.node
	}
	return p.nodes[len(p.nodes)-1]
}

// schemaPath is the schema path of the value a path reads.
func (p *qpath) schemaPath() string {
	rp := p.rp
	for _, k := range p.keys {
		rp = ir.SchemaPath(rp, k)
	}
	return rp
}

// schemaPaths are the schema paths of the value, from each of the
// root's paths.
func (p *qpath) schemaPaths() []string {
	var out []string
	for _, root := range append([]string{p.rp}, p.aliases...) {
		rp := root
		for _, k := range p.keys {
			rp = ir.SchemaPath(rp, k)
		}
		out = append(out, rp)
	}
	return out
}

// read records a read of the value's field key (suffix "[]": its items)
// at every schema path of the value.
func (q *query) read(p *qpath, key, shape string, present bool, enum []string) {
	if p.params {
		// The API server decodes a ConfigMap into its type; offline the
		// runtime checks params apart (a ConfigMap's data are strings).
		return
	}
	for _, base := range p.schemaPaths() {
		rp := base + "[]"
		if key != "[]" {
			rp = ir.SchemaPath(base, key)
		}
		q.t.read(rp, shape, present)
		if len(enum) > 0 {
			q.t.readEnum(rp, enum)
		}
	}
}

// expr selects the value (each key assumed present).
func (p *qpath) expr(b *celbuild.Builder) celbuild.Expr {
	e := p.root
	for _, k := range p.keys {
		e = b.Select(e, k)
	}
	return e
}

// present is when every key is present (nil: always).
func (p *qpath) present(b *celbuild.Builder) celbuild.Expr {
	var conds []celbuild.Expr
	e := p.root
	for i, k := range p.keys {
		if !p.always[i] {
			conds = append(conds, b.Has(e, k))
		}
		e = b.Select(e, k)
	}
	if len(conds) == 0 {
		return nil
	}
	return b.And(conds...)
}

// optional is the value as an optional chain: plain selections up to the
// first key that may be missing, optional ones from there.
func (p *qpath) optional(b *celbuild.Builder) (celbuild.Expr, bool) {
	e := p.root
	opt := false
	for i, k := range p.keys {
		if opt || !p.always[i] {
			e = b.OptionalSelect(e, k)
			opt = true
			continue
		}
		e = b.Select(e, k)
	}
	return e, opt
}

// mayErr says a strict read may fail (a key that may be missing).
func (p *qpath) mayErr() bool {
	if !p.strict {
		return false
	}
	for i, a := range p.always {
		if !a && !(i == 0 && p.nullableData) {
			return true
		}
	}
	return false
}

// knows says the field key under the value is known to be present.
func (p *qpath) knows(key string) bool {
	return slices.Contains(p.known, keyPath(append(slices.Clone(p.keys), key)...))
}

func (p *qpath) with(key string, n kubeschema.Node, always bool) *qpath {
	out := *p
	out.plain, out.ascii, out.jsonSafe = false, false, false
	out.keys = append(append([]string(nil), p.keys...), key)
	out.nodes = append(append([]kubeschema.Node(nil), p.nodes...), n)
	out.always = append(append([]bool(nil), p.always...), always)
	return &out
}

// query lowers one JMESPath query.
type query struct {
	t     *Translator
	b     *celbuild.Builder
	roots Roots
	text  string
	names map[string]bool
	// visible is how many of the rule's context entries the query sees.
	visible int
	// contextQuery says the query is a context entry's own jmesPath.
	contextQuery bool
}

func (q *query) refuse(format string, args ...any) error {
	return notTyped("JMESPath %q: %s", q.text, fmt.Sprintf(format, args...))
}

// Query lowers the JMESPath query text against roots.
func (t *Translator) query(text string, roots Roots, names map[string]bool) (qval, error) {
	node, err := gojmespath.NewParser().Parse(text)
	if err != nil {
		return qval{}, notTyped("JMESPath %q does not parse: %v", text, err)
	}
	q := &query{t: t, b: t.b, roots: roots, text: text, names: names, visible: len(t.context)}
	if err := q.loadsMentioned(text); err != nil {
		return qval{}, err
	}
	v, err := q.node(node, qval{kind: qPseudo, pseudo: "$"}, true)
	if err != nil {
		return qval{}, err
	}
	if v.kind == qPseudo || v.kind == qMulti {
		return qval{}, q.refuse("not a value")
	}
	return v, nil
}

func (q *query) fresh(base string) string {
	name := base
	for i := 2; q.names[name] || reservedName[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	q.names[name] = true
	return name
}

func (q *query) node(n gojmespath.ASTNode, cur qval, strict bool) (qval, error) {
	switch n.NodeType {
	case gojmespath.ASTField:
		return q.field(cur, n.Value.(string), strict)
	case gojmespath.ASTSubexpression:
		if n.Children[1].NodeType == gojmespath.ASTFunctionExpression {
			return qval{}, q.refuse("a function applied to a selection")
		}
		left, err := q.node(n.Children[0], cur, strict)
		if err != nil {
			return qval{}, err
		}
		return q.node(n.Children[1], left, strict)
	case gojmespath.ASTCurrentNode, gojmespath.ASTIdentity:
		return cur, nil
	case gojmespath.ASTLiteral:
		return qval{kind: qLit, lit: n.Value}, nil
	case gojmespath.ASTProjection, gojmespath.ASTFilterProjection:
		return q.projection(n, cur)
	case gojmespath.ASTMultiSelectList:
		return q.multiSelect(n, cur)
	case gojmespath.ASTOrExpression:
		return q.or(n, cur)
	case gojmespath.ASTFunctionExpression:
		return q.function(n, cur)
	case gojmespath.ASTComparator:
		return q.comparator(n, cur)
	case gojmespath.ASTPipe:
		return q.pipe(n, cur, strict)
	case gojmespath.ASTValueProjection:
		return q.valueProjection(n, cur)
	}
	return qval{}, q.refuse("%s", strings.TrimPrefix(n.NodeType.String(), "AST"))
}

// field is a key of cur.
func (q *query) field(cur qval, key string, strict bool) (qval, error) {
	if strings.Contains(key, "__admitc") && !(key == elementNameKey && cur.kind == qPseudo) {
		return qval{}, q.refuse("a nested variable")
	}
	switch cur.kind {
	case qPseudo:
		return q.rootField(cur.pseudo, key)
	case qNull, qList, qScalar:
		// A field of null, of a list or of a scalar is null.
		if cur.kind == qScalar && cur.scalar.shape == kubeschema.Object {
			return qval{}, q.refuse("a field of a computed object")
		}
		return qval{kind: qNull}, nil
	case qLit:
		if m, ok := cur.lit.(map[string]any); ok {
			if v, ok := m[key]; ok {
				return qval{kind: qLit, lit: v}, nil
			}
			if strict {
				return qval{}, q.refuse("a key missing from a literal")
			}
		}
		return qval{kind: qNull}, nil
	case qPath:
		p := cur.path
		if p.hasDflt {
			return qval{}, q.refuse("a field of a defaulted value")
		}
		n := p.final()
		rp := ir.SchemaPath(p.schemaPath(), key)
		if p.params && len(p.keys) == 0 {
			switch {
			case key != "data":
				return qval{}, q.refuse("the ConfigMap's %s is not read by the typed translation", key)
			case strict && !q.t.nullData:
				// Kyverno's loader writes data: null for a ConfigMap
				// without data, and a key of null is null, not the
				// error a missing key is.
				return qval{}, q.refuse("a strict read of a ConfigMap's data, null where the ConfigMap has none")
			}
		}
		switch n.Shape() {
		case kubeschema.Object:
			child, ok := n.Field(key)
			if !ok {
				q.read(p, key, ir.SchemaAbsent, false, nil)
				if strict {
					return qval{}, q.refuse("%s is not a field of the schema", rp)
				}
				return qval{kind: qNull}, nil
			}
			if child.Shape() == kubeschema.Unknown {
				return qval{}, q.refuse("the schema does not say what %s holds", rp)
			}
			// Recorded as the schema says: a field known to be present
			// where it is read is not present in every object.
			always := n.AlwaysPresent(key)
			out := p.with(key, child, always || p.knows(key))
			out.strict = strict
			out.nullableData = p.params && len(p.keys) == 0 && strict
			enum := child.Enum()
			if len(enum) > 0 && !slices.ContainsFunc(enum, func(v string) bool { return strings.ContainsAny(v, "*?") }) {
				out.plain = true
			} else {
				enum = nil
			}
			q.read(p, key, child.Shape().String(), always, enum)
			if n.FieldFormat(key) == kubeschema.FormatDNSLabel && !p.params {
				// A name the API server validates: never a wildcard,
				// nothing to escape.
				out.plain, out.jsonSafe = true, true
				for _, base := range p.schemaPaths() {
					q.t.readFormat(ir.SchemaPath(base, key), ir.FormatDNSLabel)
				}
			}
			return qval{kind: qPath, path: out}, nil
		case kubeschema.Map:
			child := n.Values()
			if child.Shape() == kubeschema.Unknown {
				return qval{}, q.refuse("the schema does not say what %s holds", rp)
			}
			q.read(p, key, child.Shape().String(), false, nil)
			out := p.with(key, child, p.knows(key))
			if len(p.keys) > 0 && !p.params && p.parent().ValuesFormat(p.keys[len(p.keys)-1]) == kubeschema.FormatLabelValue {
				// A label's value: ASCII, never a wildcard, nothing to
				// escape.
				out.plain, out.ascii, out.jsonSafe = true, true, true
				for _, base := range p.schemaPaths() {
					q.t.readFormat(ir.SchemaPath(base, key), ir.FormatLabelValue)
				}
			}
			out.strict = strict
			return qval{kind: qPath, path: out}, nil
		case kubeschema.Unknown, kubeschema.IntOrString:
			return qval{}, q.refuse("the schema does not say what %s holds", p.schemaPath())
		}
		return qval{kind: qNull}, nil
	}
	return qval{}, q.refuse("a field of a multi-select list")
}

// rootField resolves the names of Kyverno's context.
func (q *query) rootField(pseudo, key string) (qval, error) {
	if pseudo == "$" {
		if i := q.contextIndex(key); i >= 0 {
			return q.contextValue(i)
		}
	}
	if strings.HasPrefix(pseudo, "images") || strings.HasPrefix(pseudo, "element-image.") {
		return q.imagesField(pseudo, key)
	}
	switch pseudo + "." + key {
	case "$.request":
		return qval{kind: qPseudo, pseudo: "request"}, nil
	case "$.element":
		if e := q.roots.Element; e != nil {
			return qval{kind: qPath, path: &qpath{root: e.Expr, node: e.Node, rp: e.Path, aliases: e.Aliases, known: e.Known, strict: true, elem: true}}, nil
		}
	case "request.object":
		if q.contextQuery {
			if q.roots.NullContextObject {
				return qval{kind: qNull}, nil
			}
			if q.roots.ContextObject == nil {
				return qval{}, q.refuse("request.object in a context entry's query of a policy that matches DELETE (null there, unlike in a {{ }} substitution)")
			}
			return qval{kind: qPath, path: &qpath{root: q.roots.ContextObject, node: q.roots.Node, strict: true}}, nil
		}
		if q.roots.Object != nil {
			return qval{kind: qPath, path: &qpath{root: q.roots.Object, node: q.roots.Node, strict: true}}, nil
		}
	case "request.operation":
		if q.roots.Operation != nil {
			return qval{kind: qScalar, scalar: &qscalar{expr: q.roots.Operation, shape: kubeschema.String, plain: true}}, nil
		}
	case "$.images":
		if q.roots.NoImages {
			return qval{kind: qNull}, nil
		}
		if q.roots.Images == nil {
			return qval{}, q.refuse("images, where its pod spec is not known (a kind without one, or kinds that keep it at different paths)")
		}
		q.t.readsImages = true
		return qval{kind: qPseudo, pseudo: "images"}, nil
	case "request.namespace":
		// A namespace name holds no wildcard character ("" for a
		// cluster-scoped object).
		ns := q.b.Field(q.b.Ident("request"), "namespace")
		return qval{kind: qScalar, scalar: &qscalar{expr: ns, shape: kubeschema.String, plain: true}}, nil
	}
	return qval{}, q.refuse("%s.%s is not read by the typed translation", pseudo, key)
}

// projection is ASTProjection (and x[], the projection of x flattened)
// and ASTFilterProjection.
func (q *query) projection(n gojmespath.ASTNode, cur qval) (qval, error) {
	var src qval
	var err error
	if n.Children[0].NodeType == gojmespath.ASTFlatten {
		src, err = q.flatten(n.Children[0], cur)
	} else {
		src, err = q.node(n.Children[0], cur, false)
	}
	if err != nil {
		return qval{}, err
	}
	list, err := q.asList(src)
	if err != nil || list == nil {
		return qval{kind: qNull}, err
	}
	if n.NodeType == gojmespath.ASTFilterProjection {
		var cond qval
		var truthy celbuild.Expr
		mayErr := false
		switch n.Children[2].NodeType {
		case gojmespath.ASTAndExpression, gojmespath.ASTOrExpression, gojmespath.ASTNotExpression, gojmespath.ASTComparator:
			truthy, mayErr, err = q.filterCond(n.Children[2], list.elem)
		default:
			cond, err = q.node(n.Children[2], list.elem, false)
			if err == nil {
				truthy, err = q.truthy(cond)
				mayErr = cond.kind == qScalar && cond.scalar.mayErr
			}
		}
		if err != nil {
			return qval{}, err
		}
		list = list.filtered(q.b, truthy)
		list.mayErr = list.mayErr || mayErr
		if e := list.elem; cond.kind == qPath && e.kind == qPath && len(cond.path.keys) == len(e.path.keys)+1 && q.b.Same(cond.path.root, e.path.root) {
			// [?field] keeps the elements that have the field.
			known := *e.path
			known.known = append(slices.Clone(known.known), keyPath(cond.path.keys...))
			list.elem = qval{kind: qPath, path: &known}
		}
	}
	right, err := q.node(n.Children[1], list.elem, false)
	if err != nil {
		return qval{}, err
	}
	if right.kind == qPseudo || right.kind == qMulti || right.kind == qLit || right.kind == qList {
		return qval{}, q.refuse("a projection onto a literal, a list of lists or a multi-select list")
	}
	if right.kind == qNull {
		return qval{}, q.refuse("a projection onto a field no element has")
	}
	out := *list
	out.elem = right
	return qval{kind: qList, list: &out}, nil
}

// asList is a value as the elements a projection iterates (nil: the
// projection is null).
func (q *query) asList(v qval) (*qlist, error) {
	switch v.kind {
	case qNull:
		return nil, nil
	case qList:
		l := v.list
		if l.elem.kind == qPath {
			if present := l.elem.path.present(q.b); present != nil {
				l = l.filtered(q.b, present)
			}
		}
		return l, nil
	case qPath:
		p := v.path
		if p.hasDflt {
			return nil, q.refuse("a projection of a defaulted value")
		}
		if p.shape() != kubeschema.List {
			// A projection of anything but a list is null.
			return nil, nil
		}
		items := p.final().Items()
		if items.Shape() == kubeschema.Unknown {
			return nil, q.refuse("the schema does not say what %s holds", p.schemaPath())
		}
		q.read(p, "[]", items.Shape().String(), false, nil)
		var aliases []string
		for _, a := range p.schemaPaths()[1:] {
			aliases = append(aliases, a+"[]")
		}
		name := q.fresh(singular(p.schemaPath()))
		return &qlist{
			gens:   []qgen{{src: p.expr(q.b), v: name}},
			elem:   qval{kind: qPath, path: &qpath{root: q.b.Ident(name), node: items, rp: p.schemaPath() + "[]", aliases: aliases, params: p.params}},
			null:   negate(q.b, p.present(q.b)),
			optSrc: optionalList(q.b, p),
		}, nil
	}
	return nil, q.refuse("a projection of a computed value")
}

// optionalList is the list a path reads as an optional chain, or [].
func optionalList(b *celbuild.Builder, p *qpath) celbuild.Expr {
	opt, ok := p.optional(b)
	if !ok {
		return p.expr(b)
	}
	return b.OrValue(opt, b.List())
}

func negate(b *celbuild.Builder, e celbuild.Expr) celbuild.Expr {
	if e == nil {
		return nil
	}
	return b.Not(e)
}

// filtered is l keeping the elements cond holds for.
func (l *qlist) filtered(b *celbuild.Builder, cond celbuild.Expr) *qlist {
	out := *l
	out.gens = append([]qgen(nil), l.gens...)
	out.loose = nil
	last := &out.gens[len(out.gens)-1]
	if last.filter == nil {
		last.filter = cond
	} else {
		last.filter = b.And(last.filter, cond)
	}
	return &out
}

// flatten is ASTFlatten: the list with its list elements spliced in.
func (q *query) flatten(n gojmespath.ASTNode, cur qval) (qval, error) {
	inner := n.Children[0]
	if inner.NodeType == gojmespath.ASTSubexpression && inner.Children[1].NodeType == gojmespath.ASTMultiSelectList {
		base, err := q.node(inner.Children[0], cur, false)
		if err != nil {
			return qval{}, err
		}
		return q.flattenMulti(inner.Children[1], base)
	}
	v, err := q.node(inner, cur, false)
	if err != nil {
		return qval{}, err
	}
	switch v.kind {
	case qNull:
		return v, nil
	case qPath:
		list, err := q.asList(v)
		if err != nil || list == nil {
			return qval{kind: qNull}, err
		}
		return q.spliced(list)
	case qList:
		return q.spliced(v.list)
	}
	return qval{}, q.refuse("a flattened computed value")
}

// spliced is the elements of l with the lists among them spliced in.
func (q *query) spliced(l *qlist) (qval, error) {
	e := l.elem
	if e.kind != qPath || e.path.shape() != kubeschema.List {
		return qval{kind: qList, list: l}, nil
	}
	inner, err := q.asList(e)
	if err != nil {
		return qval{}, err
	}
	out := *l
	out.gens = append([]qgen(nil), l.gens...)
	if present := e.path.present(q.b); present != nil {
		out = *out.filtered(q.b, present)
	}
	out.gens = append(out.gens, inner.gens...)
	out.elem = inner.elem
	return qval{kind: qList, list: &out}, nil
}

// flattenMulti is x.[a, b, c][]: the lists a, b and c of x concatenated
// (a missing one is a null element the projection drops), null when x is.
func (q *query) flattenMulti(n gojmespath.ASTNode, base qval) (qval, error) {
	if base.kind == qNull {
		return base, nil
	}
	if base.kind != qPath || base.path.hasDflt || base.path.shape() != kubeschema.Object {
		return qval{}, q.refuse("a multi-select list of a computed value")
	}
	var parts, optParts []celbuild.Expr
	var items []kubeschema.Node
	var names []string
	var lists []*qpath
	for _, c := range n.Children {
		if c.NodeType != gojmespath.ASTField {
			return qval{}, q.refuse("a multi-select list of anything but fields")
		}
		f, err := q.field(base, c.Value.(string), false)
		if err != nil {
			return qval{}, err
		}
		if f.kind == qNull {
			continue
		}
		p := f.path
		if p.shape() != kubeschema.List {
			return qval{}, q.refuse("a multi-select list of a field that is not a list")
		}
		if p.always[len(p.always)-1] {
			parts = append(parts, p.expr(q.b))
		} else {
			opt, _ := p.optional(q.b)
			parts = append(parts, q.b.OrValue(opt, q.b.List()))
		}
		optParts = append(optParts, optionalList(q.b, p))
		items = append(items, p.final().Items())
		names = append(names, p.schemaPath())
		lists = append(lists, p)
	}
	if len(parts) == 0 {
		return qval{}, q.refuse("a multi-select list of fields no object has")
	}
	// Concatenated pod spec lists read as the pod spec lists them.
	src, optSrc := parts[0], optParts[0]
	for i := range parts[1:] {
		src, optSrc = q.b.Add(src, parts[i+1]), q.b.Add(optSrc, optParts[i+1])
	}
	node := kubeschema.Intersect(items...)
	if node.Shape() == kubeschema.Unknown {
		return qval{}, q.refuse("lists of different schemas")
	}
	var paths []string
	for _, l := range lists {
		q.read(l, "[]", node.Shape().String(), false, nil)
		for _, p := range l.schemaPaths() {
			paths = append(paths, p+"[]")
		}
	}
	name := q.fresh(multiName(names))
	return qval{kind: qList, list: &qlist{
		gens:   []qgen{{src: src, v: name}},
		elem:   qval{kind: qPath, path: &qpath{root: q.b.Ident(name), node: node, rp: paths[0], aliases: paths[1:], params: base.path.params}},
		null:   negate(q.b, base.path.present(q.b)),
		optSrc: optSrc,
	}}, nil
}

// multiName names an element of several lists: a container of the
// containers, initContainers and ephemeralContainers.
func multiName(paths []string) string {
	name := singular(paths[0])
	for _, p := range paths[1:] {
		if singular(p) != name {
			return "item"
		}
	}
	return name
}

// multiSelect is a multi-select list not flattened: refused.
func (q *query) multiSelect(n gojmespath.ASTNode, cur qval) (qval, error) {
	return qval{}, q.refuse("a multi-select list not flattened")
}

// or is ASTOrExpression with a literal right side: the left side unless
// it is null or false-like.
func (q *query) or(n gojmespath.ASTNode, cur qval) (qval, error) {
	left, err := q.node(n.Children[0], cur, false)
	if err != nil {
		return qval{}, err
	}
	right, err := q.node(n.Children[1], cur, false)
	if err != nil {
		return qval{}, err
	}
	if right.kind != qLit {
		return qval{}, q.refuse("|| with a right side that is not a literal")
	}
	switch left.kind {
	case qNull:
		return right, nil
	case qMaybe:
		lit, ok := right.lit.(string)
		if !ok || left.scalar.shape != kubeschema.String {
			return qval{}, q.refuse("|| with a default that is not a string")
		}
		// Null or "": the default.
		null := q.b.Or(left.scalar.null, q.b.Eq(left.scalar.expr, q.b.String("")))
		if lit == "" {
			null = left.scalar.null
		}
		out := *left.scalar
		out.expr, out.null = q.b.Ternary(null, q.b.String(lit), left.scalar.expr), nil
		return qval{kind: qScalar, scalar: &out}, nil
	case qScalar:
		if left.scalar.shape == kubeschema.String && left.scalar.plain {
			// An operation is never empty.
			return left, nil
		}
	case qPath:
		p := *left.path
		if p.hasDflt {
			return qval{}, q.refuse("|| twice")
		}
		p.dflt, p.hasDflt = right.lit, true
		return qval{kind: qPath, path: &p}, nil
	case qList:
		if l, ok := right.lit.([]any); ok && len(l) == 0 {
			// Null or empty: the empty list.
			return qval{kind: qList, list: left.list.orEmpty()}, nil
		}
	}
	return qval{}, q.refuse("|| on this value")
}

// orEmpty is l where it is null the empty list: its first list read as
// an optional chain or [].
func (l *qlist) orEmpty() *qlist {
	out := *l
	if out.null != nil {
		out.gens = append([]qgen(nil), out.gens...)
		out.gens[0].src, out.null, out.optSrc = out.optSrc, nil, nil
	}
	return &out
}

// truthy is JMESPath's truthiness of a filter's condition (not null,
// false, empty).
func (q *query) truthy(v qval) (celbuild.Expr, error) {
	switch v.kind {
	case qNull:
		return q.b.Bool(false), nil
	case qScalar:
		if v.scalar.shape == kubeschema.Boolean {
			return v.scalar.expr, nil
		}
	case qPath:
		p := v.path
		if p.hasDflt {
			break
		}
		var value celbuild.Expr
		e := p.expr(q.b)
		switch p.shape() {
		case kubeschema.Boolean:
			value = e
		case kubeschema.String, kubeschema.List, kubeschema.Map:
			value = q.b.Compare(">", q.b.Size(e), q.b.Int(0))
		case kubeschema.Integer, kubeschema.Number, kubeschema.Object:
			value = q.b.Bool(true)
		default:
			return nil, q.refuse("a filter on a value the schema does not fix")
		}
		if present := p.present(q.b); present != nil {
			return q.b.And(present, value), nil
		}
		return value, nil
	}
	return nil, q.refuse("a filter condition the typed translation does not take")
}

// isASCII says v is a string of ASCII characters.
func isASCII(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// function is the functions the typed translation takes: length of a
// value that is never null, and contains(keys(@), 'k') in a filter.
func (q *query) function(n gojmespath.ASTNode, cur qval) (qval, error) {
	name := n.Value.(string)
	switch {
	case name == "length" && len(n.Children) == 1 && isFunction(n.Children[0], "keys", 1):
		// length(keys(m)) of a map: its size.
		arg, err := q.node(n.Children[0].Children[0], cur, false)
		if err != nil {
			return qval{}, err
		}
		if arg.kind != qPath || arg.path.hasDflt || arg.path.present(q.b) != nil {
			return qval{}, q.refuse("length(keys()) of a value that is not always there")
		}
		switch p := arg.path; p.shape() {
		case kubeschema.Map:
			return qval{kind: qScalar, scalar: &qscalar{expr: q.b.Size(p.expr(q.b)), shape: kubeschema.Integer}}, nil
		case kubeschema.Object:
			// An object's keys are the fields it has: how many of its
			// schema's fields are there (the API server writes none it
			// does not name).
			fields, ok := p.final().Fields()
			if !ok {
				return qval{}, q.refuse("length(keys()) of an object whose schema does not name its fields")
			}
			var has []celbuild.Expr
			for _, f := range fields {
				child, _ := p.final().Field(f)
				q.read(p, f, child.Shape().String(), false, nil)
				has = append(has, q.b.Has(p.expr(q.b), f))
			}
			return qval{kind: qScalar, scalar: &qscalar{expr: q.b.Count(has...), shape: kubeschema.Integer}}, nil
		}
		return qval{}, q.refuse("length(keys()) of a value that is not a map or an object")
	case name == "to_string" && len(n.Children) == 1:
		arg, err := q.node(n.Children[0], cur, false)
		if err != nil {
			return qval{}, err
		}
		return q.toString(arg)
	case (name == "to_upper" || name == "to_lower") && len(n.Children) == 1:
		// Kyverno's are Unicode's; CEL's are ASCII's: the same on a
		// value the API server keeps ASCII (a label's).
		arg, err := q.node(n.Children[0], cur, false)
		if err != nil {
			return qval{}, err
		}
		if arg.kind != qPath || !arg.path.ascii || arg.path.hasDflt && !isASCII(arg.path.dflt) {
			return qval{}, q.refuse("%s() of a value that may hold letters other than ASCII", name)
		}
		s, mayErr, err := q.stringArg(arg)
		if err != nil {
			return qval{}, err
		}
		fn := map[string]string{"to_upper": "upperAscii", "to_lower": "lowerAscii"}[name]
		return qval{kind: qScalar, scalar: &qscalar{expr: q.b.Member(fn, s), shape: kubeschema.String, mayErr: mayErr}}, nil
	case name == "regex_match" && len(n.Children) == 2 && n.Children[0].NodeType == gojmespath.ASTLiteral:
		re, ok := n.Children[0].Value.(string)
		if !ok {
			break
		}
		if _, err := regexp.Compile(re); err != nil {
			return qval{}, q.refuse("regex_match() with an invalid pattern: %v", err)
		}
		arg, err := q.node(n.Children[1], cur, false)
		if err != nil {
			return qval{}, err
		}
		s, mayErr, err := q.stringArg(arg)
		if err != nil {
			return qval{}, err
		}
		return qval{kind: qScalar, scalar: &qscalar{expr: q.b.Member("matches", s, q.b.String(re)), shape: kubeschema.Boolean, mayErr: mayErr}}, nil
	case name == "length" && len(n.Children) == 1:
		arg, err := q.node(n.Children[0], cur, false)
		if err != nil {
			return qval{}, err
		}
		if list, ok := strings.CutPrefix(arg.pseudo, "images."); arg.kind == qPseudo && ok {
			return q.imagesCount(list)
		}
		size, err := q.size(arg)
		if err != nil {
			return qval{}, err
		}
		mayErr := arg.kind == qList && (arg.list.mayErr || arg.list.null != nil)
		return qval{kind: qScalar, scalar: &qscalar{expr: size, shape: kubeschema.Integer, mayErr: mayErr}}, nil
	case name == "pattern_match" && len(n.Children) == 2 && n.Children[0].NodeType == gojmespath.ASTLiteral:
		return q.patternMatch(n.Children[0].Value, n.Children[1], cur)
	case name == "label_match" && len(n.Children) == 2 && n.Children[0].NodeType == gojmespath.ASTLiteral:
		return q.labelMatch(n.Children[0].Value, n.Children[1], cur)
	case name == "to_array" && len(n.Children) == 1:
		return q.toArray(n.Children[0], cur)
	case name == "split" && len(n.Children) == 2 && n.Children[1].NodeType == gojmespath.ASTLiteral:
		return q.split(n.Children[0], n.Children[1].Value, cur)
	case (name == "starts_with" || name == "ends_with" || name == "contains") && len(n.Children) == 2 && !isKeysOfCurrent(n.Children[0]) && n.Children[1].NodeType == gojmespath.ASTLiteral:
		return q.stringFunction(name, n.Children[0], n.Children[1].Value, cur)
	case name == "contains" && len(n.Children) == 2 && isKeysOfCurrent(n.Children[0]) && n.Children[1].NodeType == gojmespath.ASTLiteral:
		key, ok := n.Children[1].Value.(string)
		if !ok || cur.kind != qPath || cur.path.hasDflt || cur.path.shape() != kubeschema.Object {
			break
		}
		f, err := q.field(cur, key, false)
		if err != nil {
			return qval{}, err
		}
		if f.kind == qNull {
			return qval{kind: qScalar, scalar: &qscalar{expr: q.b.Bool(false), shape: kubeschema.Boolean}}, nil
		}
		p := cur.path
		present := q.b.Has(p.expr(q.b), key)
		if f.path.always[len(f.path.always)-1] {
			present = q.b.Bool(true)
		}
		return qval{kind: qScalar, scalar: &qscalar{expr: present, shape: kubeschema.Boolean}}, nil
	}
	return qval{}, q.refuse("the function %s() is not in the typed subset", name)
}

// split is Kyverno's split(s, sep) with a literal separator: Go's
// strings.Split, as CEL's split is. A string field that may be missing
// is null there, which fails the function ("Invalid type"); the list's
// source, the field selected plainly, fails in CEL exactly there too,
// and raises says where, for a reader that may not evaluate the source
// (the value side of an In operator, read inside the key's
// comprehension).
func (q *query) split(argNode gojmespath.ASTNode, lit any, cur qval) (qval, error) {
	sep, ok := lit.(string)
	if !ok {
		return qval{}, q.refuse("split() with a separator that is not a string")
	}
	arg, err := q.node(argNode, cur, false)
	if err != nil {
		return qval{}, err
	}
	var src, raises celbuild.Expr
	name := "item"
	switch {
	case arg.kind == qLit:
		s, ok := arg.lit.(string)
		if !ok {
			return qval{}, q.refuse("split() of a literal that is not a string")
		}
		src = q.b.String(s)
	case arg.kind == qPath && !arg.path.hasDflt && arg.path.shape() == kubeschema.String:
		src, raises, name = arg.path.expr(q.b), negate(q.b, arg.path.present(q.b)), singular(arg.path.schemaPath())
	case arg.kind == qScalar && arg.scalar.shape == kubeschema.String && !arg.scalar.mayErr:
		src = arg.scalar.expr
	default:
		return qval{}, q.refuse("split() of a value that may not be a string")
	}
	v := q.fresh(name)
	return qval{kind: qList, list: &qlist{
		gens:       []qgen{{src: q.b.Member("split", src, q.b.String(sep)), v: v}},
		elem:       qval{kind: qScalar, scalar: &qscalar{expr: q.b.Ident(v), shape: kubeschema.String}},
		mayErr:     raises != nil,
		raises:     raises,
		raisesText: fmt.Sprintf("failed to resolve %s at path : JMESPath query failed: Invalid type for: <nil>, expected: []jmespath.JpType{\"string\"}", q.text),
		kept:       true,
	}}, nil
}

// stringFunction is starts_with, ends_with and contains of a string
// field and a literal string: a missing or null field fails the function
// ("invalid type"), as selecting it fails in CEL.
func (q *query) stringFunction(name string, argNode gojmespath.ASTNode, lit any, cur qval) (qval, error) {
	s, ok := lit.(string)
	if !ok {
		return qval{}, q.refuse("%s() with a literal that is not a string", name)
	}
	arg, err := q.node(argNode, cur, false)
	if err != nil {
		return qval{}, err
	}
	if arg.kind != qPath || arg.path.hasDflt || arg.path.shape() != kubeschema.String {
		return qval{}, q.refuse("%s() of a value that is not a string field", name)
	}
	method := map[string]string{"starts_with": "startsWith", "ends_with": "endsWith", "contains": "contains"}[name]
	p := arg.path
	e := q.b.Member(method, p.expr(q.b), q.b.String(s))
	return qval{kind: qScalar, scalar: &qscalar{expr: e, shape: kubeschema.Boolean, mayErr: p.present(q.b) != nil}}, nil
}

// patternMatch is Kyverno's pattern_match(pattern, s) of a literal
// pattern and a string field: wildcard.Match ('*' any run of characters,
// '?' exactly one). A missing or null field fails the function ("invalid
// type"), as selecting it fails in CEL.
func (q *query) patternMatch(lit any, argNode gojmespath.ASTNode, cur qval) (qval, error) {
	p, ok := lit.(string)
	if !ok {
		return qval{}, q.refuse("pattern_match() with a pattern that is not a string")
	}
	arg, err := q.node(argNode, cur, false)
	if err != nil {
		return qval{}, err
	}
	if arg.kind != qPath || arg.path.shape() != kubeschema.String || arg.path.hasDflt && arg.path.dflt != "" {
		return qval{}, q.refuse("pattern_match() of a value that is not a string field")
	}
	s := arg.path.expr(q.b)
	mayErr := arg.path.present(q.b) != nil
	if mayErr && !arg.path.hasDflt && strings.Trim(p, "*") == "" {
		// The match is true whatever the value: a missing field would
		// not be read, where Kyverno's function fails.
		return qval{}, q.refuse("pattern_match() of %q on a field that may be missing", p)
	}
	if arg.path.hasDflt {
		// x || '': a missing or empty value is ''.
		opt, _ := arg.path.optional(q.b)
		s, mayErr = q.b.OrValue(opt, q.b.String("")), false
	}
	e, err := q.b.Parse(pattern.WildcardMatch(p, "s"))
	if err != nil {
		return qval{}, err
	}
	e = q.b.Substitute(e, "s", s)
	return qval{kind: qScalar, scalar: &qscalar{expr: e, shape: kubeschema.Boolean, mayErr: mayErr}}, nil
}

// labelMatch is Kyverno's label_match(labels, m) of a literal map and a
// map of strings that is never null (or null read as {}): every key of
// the literal is in m with an equal value (a value that is not a string
// equals none of m's).
func (q *query) labelMatch(lit any, argNode gojmespath.ASTNode, cur qval) (qval, error) {
	labels, ok := lit.(map[string]any)
	if !ok {
		return qval{}, q.refuse("label_match() of a literal that is not a map")
	}
	arg, err := q.node(argNode, cur, false)
	if err != nil {
		return qval{}, err
	}
	if arg.kind != qPath || arg.path.shape() != kubeschema.Map || arg.path.final().Values().Shape() != kubeschema.String {
		return qval{}, q.refuse("label_match() of a value that is not a map of strings")
	}
	p := arg.path
	// m is the map, maybe as an optional chain (a missing one is {}).
	var m celbuild.Expr
	switch {
	case p.hasDflt && isEmpty(p.dflt, kubeschema.Map):
		m, _ = p.optional(q.b)
	case !p.hasDflt && p.present(q.b) == nil:
		m = p.expr(q.b)
	default:
		return qval{}, q.refuse("label_match() of a map that may be null")
	}
	var terms []celbuild.Expr
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v, ok := labels[k].(string)
		switch {
		case !ok:
			terms = append(terms, q.b.Bool(false))
		case v == "":
			// A missing key is not "".
			value := q.b.OptionalSelect(m, k)
			terms = append(terms, q.b.And(q.b.Member("hasValue", value), q.b.Eq(q.b.Member("value", value), q.b.String(""))))
		default:
			terms = append(terms, q.b.Eq(q.b.OrValue(q.b.OptionalSelect(m, k), q.b.String("")), q.b.String(v)))
		}
	}
	e := celbuild.Expr(q.b.Bool(true))
	if len(terms) > 0 {
		e = q.b.And(terms...)
	}
	return qval{kind: qScalar, scalar: &qscalar{expr: e, shape: kubeschema.Boolean}}, nil
}

// toArray is to_array(x) of a list that is never null: the list itself
// (of null it would be [null], of any other value a list of it).
func (q *query) toArray(argNode gojmespath.ASTNode, cur qval) (qval, error) {
	arg, err := q.node(argNode, cur, false)
	if err != nil {
		return qval{}, err
	}
	switch {
	case arg.kind == qPath && arg.path.shape() == kubeschema.List:
		p := arg.path
		if p.hasDflt && (isEmpty(p.dflt, kubeschema.List) || isList(p.dflt)) || !p.hasDflt && p.present(q.b) == nil {
			return arg, nil
		}
	case arg.kind == qList && arg.list.null == nil && !arg.list.mayErr:
		return arg, nil
	}
	return qval{}, q.refuse("to_array() of a value that may not be a list")
}

// isList says a JMESPath literal is a list.
func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

// isFunction says n calls the function name with args arguments.
func isFunction(n gojmespath.ASTNode, name string, args int) bool {
	return n.NodeType == gojmespath.ASTFunctionExpression && n.Value == name && len(n.Children) == args
}

func isKeysOfCurrent(n gojmespath.ASTNode) bool {
	return n.NodeType == gojmespath.ASTFunctionExpression && n.Value == "keys" && len(n.Children) == 1 &&
		n.Children[0].NodeType == gojmespath.ASTCurrentNode
}

// size is length() of a value that is never null (else the function
// fails, which the typed translation leaves to the exact one).
func (q *query) size(v qval) (celbuild.Expr, error) {
	switch v.kind {
	case qPath:
		p := v.path
		var e celbuild.Expr
		switch {
		case !p.hasDflt && p.present(q.b) == nil:
			e = p.expr(q.b)
		case p.hasDflt && isEmpty(p.dflt, p.shape()):
			opt, _ := p.optional(q.b)
			e = q.b.OrValue(opt, emptyOf(q.b, p.shape()))
		default:
			return nil, q.refuse("length() of a value that may be null")
		}
		switch p.shape() {
		case kubeschema.String, kubeschema.List, kubeschema.Map, kubeschema.Object:
			return q.b.Size(e), nil
		}
	case qList:
		l := v.list
		if len(l.gens) != 1 {
			return nil, q.refuse("length() of a nested projection")
		}
		// A null projection fails length(); so does selecting the list
		// where a field on its way is missing.
		g := l.gens[0]
		keep := g.filter
		if l.elem.kind == qPath {
			if p := l.elem.path.present(q.b); p != nil {
				keep = andMaybe(q.b, keep, p)
			}
		} else if l.elem.kind != qScalar {
			return nil, q.refuse("length() of this projection")
		}
		if keep == nil {
			return q.b.Size(g.src), nil
		}
		if !l.mayErr {
			return q.b.Size(q.b.TotalFilter(g.src, g.v, keep)), nil
		}
		return q.b.Size(q.b.Filter(g.src, g.v, keep)), nil
	}
	return nil, q.refuse("length() of this value")
}

func andMaybe(b *celbuild.Builder, x, y celbuild.Expr) celbuild.Expr {
	if x == nil {
		return y
	}
	return b.And(x, y)
}

// isEmpty says a literal is the empty value of a shape (”, [], {}).
func isEmpty(v any, s kubeschema.Shape) bool {
	switch t := v.(type) {
	case string:
		return t == "" && s == kubeschema.String
	case []any:
		return len(t) == 0 && s == kubeschema.List
	case map[string]any:
		return len(t) == 0 && (s == kubeschema.Map || s == kubeschema.Object)
	}
	return false
}

func emptyOf(b *celbuild.Builder, s kubeschema.Shape) celbuild.Expr {
	switch s {
	case kubeschema.String:
		return b.String("")
	case kubeschema.List:
		return b.List()
	}
	return b.MapLiteral()
}
