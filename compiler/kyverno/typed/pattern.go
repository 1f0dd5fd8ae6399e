package typed

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/ast"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// ErrNotTyped says a pattern holds what the typed translation does not
// take (yet): the rule keeps the exact dynamic translation.
var ErrNotTyped = errors.New("not typed")

func notTyped(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotTyped, fmt.Sprintf(format, args...))
}

// Check is a pattern translated against its kind's schema, over one root
// (object or oldObject).
type Check struct {
	// OK is true when Kyverno's MatchPattern passes on the root.
	OK celbuild.Expr
	// Skip is true when it skips (a conditional anchor not satisfied);
	// nil when it never does.
	Skip celbuild.Expr
	// Bad is true when it fails: neither passes nor skips.
	Bad celbuild.Expr
	// Path is Kyverno's failure path ("/spec/containers/0/image/"), a CEL
	// string meaningful only when OK is false.
	Path celbuild.Expr
}

// Translator translates the patterns of one rule; the reads it records
// are the shape every translated pattern assumed.
type Translator struct {
	b     *celbuild.Builder
	reads map[string]ir.SchemaRead
	order []string
	// context are the rule's context variables (SetContext).
	context []conditions.Variable
	// readsImages says a query read Kyverno's images variable
	// (ReadsImages).
	readsImages bool
	// usedImages says a condition read it (UsedImages).
	usedImages bool
	// deferImages, when set, counts the conditions that read the images
	// instead of testing that they parse (ConditionsOnParsedImages).
	deferImages *imagesDeferred
	// implied are the keyPaths under the foreach element that the
	// condition being translated holds only where present (Block.Known).
	implied []string
	// errs is where the condition being translated fails, when it may
	// (a strict read of a field that may be missing): nil when not known;
	// errText is Kyverno's error there. errVar is the text of the
	// condition's key variable.
	errs    celbuild.Expr
	errText string
	errVar  string
	// listVariables, when set, has the concatenation of a pod spec's
	// three container lists of the object or the old object stand as a
	// named value (ContainerLists).
	listVariables bool
	lists         []ContainerList
	// nullData says the reader of the query being translated handles a
	// strict read of a ConfigMap's data that is null where the ConfigMap
	// has none (a message, an In operator's value).
	nullData bool
	// values are the pattern values with {{ }} variables the patterns
	// read (ReadPatternValues), by their text; nil: none is read.
	values map[string]celbuild.Expr
	// quantityValues are the values that are quantities in their
	// canonical form (ReadElementValues), by their text.
	quantityValues map[string]bool
	// prefixValues are the values that are a namespace and a prefix
	// before a '*' (namespacePrefix), by their text: the prefix.
	prefixValues map[string]celbuild.Expr
}

// ContainerList is the concatenation of a pod spec's three container
// lists of the object (Name allContainers) or the old object
// (oldAllContainers), which the translations read as the identifier
// Placeholder: each is then written as a variable (where read more than
// once) or in place.
type ContainerList struct {
	Name, Placeholder string
	Expr              celbuild.Expr
}

// NameContainerLists makes the patterns translated from now on read a
// pod spec's three container lists, checked as one, through a
// placeholder (ContainerLists).
func (t *Translator) NameContainerLists() { t.listVariables = true }

// ContainerLists are the container lists the translations read through
// placeholders (NameContainerLists), in the order first read.
func (t *Translator) ContainerLists() []ContainerList { return t.lists }

// containerLists is target, the concatenation of the lists fields, as a
// placeholder when it is the object's or the old object's three container
// lists (NameContainerLists).
func (t *Translator) containerLists(target celbuild.Expr, fields []string) celbuild.Expr {
	if !t.listVariables || len(fields) != 3 {
		return target
	}
	for _, f := range fields {
		if _, ok := listOrder[f]; !ok {
			return target
		}
	}
	text, err := t.b.Print(target)
	if err != nil {
		return target
	}
	var name string
	switch {
	case strings.HasPrefix(text, "object."):
		name = "allContainers"
	case strings.HasPrefix(text, "oldObject."):
		name = "oldAllContainers"
	default:
		return target
	}
	placeholder := "__admitc_" + name
	i := slices.IndexFunc(t.lists, func(l ContainerList) bool { return l.Name == name })
	switch {
	case i < 0:
		t.lists = append(t.lists, ContainerList{Name: name, Placeholder: placeholder, Expr: target})
	case !t.b.Same(t.lists[i].Expr, target):
		return target
	}
	return t.b.Ident(placeholder)
}

// NewTranslator translates with builder b.
func NewTranslator(b *celbuild.Builder) *Translator {
	// What it reads is typed: the schema, or offline the shape check,
	// vouches for every object a presence test reads.
	b.AssumeTypedPresence()
	return &Translator{b: b, reads: map[string]ir.SchemaRead{}}
}

// Reads are the fields the translations read, with the shape and the
// presence they assumed, in the order first read.
func (t *Translator) Reads() []ir.SchemaRead {
	out := make([]ir.SchemaRead, len(t.order))
	for i, p := range t.order {
		out[i] = t.reads[p]
	}
	return out
}

// read records that a translation reads the field at schema path path,
// assuming its shape (ir.SchemaAbsent: a field the schema does not have)
// and, with present, that every object has it.
func (t *Translator) read(path, shape string, present bool) {
	if _, ok := t.reads[path]; !ok {
		t.order = append(t.order, path)
	}
	r := t.reads[path]
	r.Path, r.Shape, r.Present = path, shape, r.Present || present
	t.reads[path] = r
}

// readEnum records that a translation assumed the field at path holds
// one of enum.
func (t *Translator) readEnum(path string, enum []string) {
	r := t.reads[path]
	r.Enum = enum
	t.reads[path] = r
}

// strength orders the quantity formats: each holds of a string only where
// the one before it does.
var strength = map[string]int{ir.FormatQuantity: 1, ir.FormatCanonicalQuantity: 2, ir.FormatPlainQuantity: 3}

// readFormat records that a translation assumed the string at path is of
// format (ir.FormatQuantity); a quantity read with a stronger format stays
// read so.
func (t *Translator) readFormat(path, format string) {
	if _, ok := t.reads[path]; !ok {
		t.read(path, kubeschema.String.String(), false)
	}
	r := t.reads[path]
	if strength[r.Format] > strength[format] {
		return
	}
	r.Format = format
	t.reads[path] = r
}

// Pattern translates a validate.pattern (as sigs.k8s.io/yaml decodes it)
// over root, whose schema is n.
func (t *Translator) Pattern(p any, root celbuild.Expr, n kubeschema.Node) (Check, error) {
	if err := typedConstructs(p, "", t.values != nil); err != nil {
		return Check{}, err
	}
	w := &walk{t: t, b: t.b, names: map[string]bool{}}
	c, err := w.element(p, root, n, kpath{}.key(""), "")
	if err != nil {
		return Check{}, err
	}
	return Check{OK: c.ok, Skip: c.skip, Bad: c.failed(t.b), Path: c.fail()}, nil
}

// PatternAt is Pattern over a value of the object (a foreach element):
// the reads are recorded under its schema path and each of its aliases.
func (t *Translator) PatternAt(p any, root Root) (Check, error) {
	if err := typedConstructs(p, "", t.values != nil); err != nil {
		return Check{}, err
	}
	before := len(t.order)
	w := &walk{t: t, b: t.b, names: map[string]bool{}, known: map[string]bool{}}
	for _, k := range root.Known {
		sp := root.Path
		for _, key := range strings.Split(k, "\x00") {
			sp = ir.SchemaPath(sp, key)
		}
		w.known[sp] = true
	}
	c, err := w.element(p, root.Expr, root.Node, kpath{}.key(""), root.Path)
	if err != nil {
		return Check{}, err
	}
	for _, path := range slices.Clone(t.order[before:]) {
		rest, ok := strings.CutPrefix(path, root.Path)
		if !ok {
			continue
		}
		r := t.reads[path]
		for _, a := range root.Aliases {
			t.read(a+rest, r.Shape, r.Present)
			if len(r.Enum) > 0 {
				t.readEnum(a+rest, r.Enum)
			}
			if r.Format != "" {
				t.readFormat(a+rest, r.Format)
			}
		}
	}
	return Check{OK: c.ok, Skip: c.skip, Bad: c.failed(t.b), Path: c.fail()}, nil
}

// typedConstructs refuses the constructs the typed translation leaves to
// the dynamic one: global, existence and add anchors, wildcard keys,
// variables and references, and conditional anchors anywhere but in one
// map reached through plain keys (and lists) whose conditional anchors
// hold scalars. There, a missing conditional key skips that map, and a
// rule that fails had every such key found: Kyverno's engine error (an
// anchor key never found before a failure) cannot happen.
func typedConstructs(p any, at string, values bool) error {
	conditional := 0
	if err := constructs(p, at, false, &conditional, values); err != nil {
		return err
	}
	if conditional > 1 {
		return notTyped("%s: conditional anchors in %d maps", at, conditional)
	}
	return nil
}

// constructs walks a pattern; anchored says an anchor's value holds it,
// conditional counts the maps with conditional anchors, values says {{ }}
// values are read (ReadPatternValues).
func constructs(p any, at string, anchored bool, conditional *int, values bool) error {
	switch pt := p.(type) {
	case map[string]any:
		hasConditional := false
		for k, v := range pt {
			a := anchorOf(k)
			switch {
			case a.kind == anchorGlobal, a.kind == anchorExistence, a.kind == anchorAdd:
				return notTyped("%s: the %s anchor %s", at, a.kind, k)
			case a.kind == anchorCondition && anchored:
				return notTyped("%s: the conditional anchor %s inside an anchor's value", at, k)
			case a.kind == anchorCondition && isCollection(v):
				return notTyped("%s: the conditional anchor %s on a map or list", at, k)
			case strings.ContainsAny(a.key, "*?"):
				return notTyped("%s: the wildcard key %s", at, k)
			case strings.Contains(k, "{{") || strings.Contains(k, "$("):
				return notTyped("%s: the key %s", at, k)
			}
			hasConditional = hasConditional || a.kind == anchorCondition
			if err := constructs(v, at+"/"+k, anchored || a.kind != anchorNone, conditional, values); err != nil {
				return err
			}
		}
		if hasConditional {
			*conditional++
		}
	case []any:
		for i, v := range pt {
			if err := constructs(v, at+"/"+strconv.Itoa(i), anchored, conditional, values); err != nil {
				return err
			}
		}
	case string:
		if strings.Contains(pt, "$(") || strings.Contains(pt, "{{") && (!values || anchored) {
			return notTyped("%s: the value %q", at, pt)
		}
	}
	return nil
}

func isCollection(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// check is one pattern node's outcome on a present value: ok when
// Kyverno passes the element, skip when it skips (a conditional anchor not
// satisfied; nil: it never does), bad when it fails (nil: whenever it
// neither passes nor skips, !ok), fail its failure path when it does.
type check struct {
	ok   celbuild.Expr
	skip celbuild.Expr
	bad  celbuild.Expr
	fail func() celbuild.Expr
	// failures, when set, is the list of the failure paths of the
	// failing elements, in Kyverno's order (a list's transformList): a
	// map's first failure is the first of its children's, concatenated.
	failures func() celbuild.Expr
	// leaf is set when ok is a scalar predicate of one value reached
	// through keys that decide alike when absent: such a check reads as
	// an optional chain, !c.?securityContext.?privileged.orValue(false).
	leaf *chain
	// list is set when ok is list.all(elem, pred): an optional list reads
	// as list.orValue([]).all(...), and lists with the same predicate are
	// checked as one (containers + initContainers).
	list *listCheck
}

// listCheck is target.all(elem, pred); field names the list; failuresOn
// lists the failure paths of the failing elements of a target.
type listCheck struct {
	target     celbuild.Expr
	field      string
	elem       string
	pred       celbuild.Expr
	failuresOn func(target celbuild.Expr) celbuild.Expr
	// name is the list's key in its elements' failure paths.
	name *listName
}

// chain is a scalar predicate on root.keys[0].keys[1]...: absent, when
// keys is not empty, is the outcome when one of them is absent.
type chain struct {
	root   celbuild.Expr
	keys   []string
	pred   func(celbuild.Expr) celbuild.Expr
	absent bool
	// dflt is a literal the predicate decides as absent, to stand for an
	// absent value (nil: none).
	dflt func(absent bool) celbuild.Expr
}

// failed is when the check fails.
func (c check) failed(b *celbuild.Builder) celbuild.Expr {
	if c.bad != nil {
		return c.bad
	}
	return b.Not(c.ok)
}

// walk translates one pattern; names are the variables in scope.
type walk struct {
	t     *Translator
	b     *celbuild.Builder
	names map[string]bool
	// known are the schema paths of the fields known to be there where
	// the pattern is matched (Root.Known): read without a presence test,
	// but not recorded as present in every object.
	known map[string]bool
}

// constant is a node that always passes or always fails at path.
func (w *walk) constant(ok bool, path kpath) check {
	return check{ok: w.b.Bool(ok), fail: func() celbuild.Expr { return path.expr(w.b) }}
}

// element is validateResourceElement on a present value v of schema n at
// Kyverno path path (rp is the schema path of the reads).
func (w *walk) element(p any, v celbuild.Expr, n kubeschema.Node, path kpath, rp string) (check, error) {
	shape := n.Shape()
	switch pt := p.(type) {
	case map[string]any:
		switch shape {
		case kubeschema.Object, kubeschema.Map:
			return w.mapPattern(pt, v, n, path, rp)
		case kubeschema.Unknown:
			return check{}, notTyped("%s: the schema does not say what it holds", rp)
		}
		return w.constant(false, path), nil
	case []any:
		switch shape {
		case kubeschema.List:
			return w.listPattern(pt, v, n, path, rp)
		case kubeschema.Unknown:
			return check{}, notTyped("%s: the schema does not say what it holds", rp)
		}
		return w.constant(false, path), nil
	case string, float64, int, int64, bool, nil:
		return w.scalar(pt, v, n, path, rp)
	}
	return check{}, notTyped("%s: a pattern value of type %T", rp, p)
}

// scalar is a scalar pattern on a present value: on a list, every
// element must match; the failure path is the value's.
func (w *walk) scalar(p any, v celbuild.Expr, n kubeschema.Node, path kpath, rp string) (check, error) {
	if s, ok := p.(string); ok && strings.Contains(s, "{{") {
		// Taken on a plain key only (dynamicKey).
		return check{}, notTyped("%s: the value %q", rp, s)
	}
	if p == "?*" && n.Shape() == kubeschema.String && n.Quantity() && v.Kind() == ast.SelectKind {
		// A quantity is never empty: the API server parses it. (Its
		// presence then reads as an optional chain where its key is a
		// name: x.?limits.?memory.hasValue().)
		w.t.readFormat(rp, ir.FormatQuantity)
		return check{ok: w.b.Bool(true), fail: func() celbuild.Expr { return path.expr(w.b) }}, nil
	}
	pred, err := pattern.Predicate(p, "x")
	if err != nil {
		return check{}, notTyped("%s: %v", rp, err)
	}
	if s, ok := p.(string); ok && n.Shape() == kubeschema.String {
		if enum := n.Enum(); len(enum) > 0 && !slices.Contains(enum, s) {
			// The field never holds the pattern as written
			// ("RuntimeDefault | Localhost"): the API server refuses
			// any value but its enum's.
			if pred, err = pattern.PredicateOfOthers(s, "x"); err != nil {
				return check{}, notTyped("%s: %v", rp, err)
			}
			w.t.readEnum(rp, enum)
		}
	}
	leafShape := n.Shape()
	if leafShape == kubeschema.List {
		leafShape = n.Items().Shape()
	}
	switch leafShape {
	case kubeschema.Integer:
		if c := intPattern(p, pred); c != "" {
			pred = c
		}
	case kubeschema.IntOrString:
		if c := intOrStringPattern(p, pred); c != "" {
			pred = c
		}
	}
	fail := func() celbuild.Expr { return path.expr(w.b) }
	if n.Shape() == kubeschema.List {
		items := n.Items()
		w.t.read(rp+"[]", items.Shape().String(), false)
		e := w.fresh("value")
		defer w.release(e)
		ok, err := predicate(w.b, pred, "x", w.b.Ident(e), items.Shape())
		if err != nil {
			return check{}, notTyped("%s: %v", rp, err)
		}
		return check{ok: w.b.All(v, e, ok), fail: fail}, nil
	}
	if n.Shape() == kubeschema.Unknown {
		return check{}, notTyped("%s: the schema does not say what it holds", rp)
	}
	ok, err := predicate(w.b, pred, "x", v, n.Shape())
	if err != nil {
		return check{}, notTyped("%s: %v", rp, err)
	}
	shape := n.Shape()
	c := check{ok: ok, fail: fail, leaf: &chain{root: v,
		pred: func(x celbuild.Expr) celbuild.Expr {
			out, _ := predicate(w.b, pred, "x", x, shape)
			return out
		},
		dflt: func(absent bool) celbuild.Expr { return defaultDecidedAs(w.b, pred, shape, absent) },
	}}
	return c, nil
}

// defaultDecidedAs is a literal of the shape that the predicate decides
// as want (false or true, "", 0), to stand for an absent value; nil when
// none does.
func defaultDecidedAs(b *celbuild.Builder, pred string, shape kubeschema.Shape, want bool) celbuild.Expr {
	var candidates []any
	switch shape {
	case kubeschema.Boolean:
		candidates = []any{false, true}
	case kubeschema.String:
		candidates = []any{""}
	case kubeschema.Integer:
		// 0, else 1 or -1: c.?securityContext.?runAsUser.orValue(1) > 0.
		candidates = []any{int64(0), int64(1), int64(-1)}
	}
	for _, c := range candidates {
		if got, err := evalBool(pred, "x", c); err == nil && got == want {
			switch v := c.(type) {
			case bool:
				return b.Bool(v)
			case string:
				return b.String(v)
			case int64:
				return b.Int(v)
			}
		}
	}
	return nil
}

// listPattern is validateArray: a list of maps checks every element
// against the first pattern map; a list of scalars every element against
// the first scalar.
func (w *walk) listPattern(p []any, v celbuild.Expr, n kubeschema.Node, path kpath, rp string) (check, error) {
	if len(p) == 0 {
		return w.constant(false, path), nil
	}
	items := n.Items()
	switch first := p[0].(type) {
	case map[string]any:
		w.t.read(rp+"[]", items.Shape().String(), false)
		if s := items.Shape(); s != kubeschema.Object && s != kubeschema.Map {
			// No element is a map: every element fails, an empty list passes.
			return check{ok: w.b.Eq(w.b.Size(v), w.b.Int(0)), fail: func() celbuild.Expr { return path.key("0").expr(w.b) }}, nil
		}
		return w.listOfMaps(first, v, items, path, rp)
	case string, float64, int, int64, bool, nil:
		return w.scalar(first, v, n, path, rp)
	}
	return check{}, notTyped("%s: a list whose first element is %T", rp, p[0])
}

// listOfMaps is validateArrayOfMaps without anchors that skip: every
// element must match; the failure is the first failing element's. The
// element's failure path holds its index: the message takes the first of
// the failing elements' paths (transformList).
func (w *walk) listOfMaps(p map[string]any, v celbuild.Expr, items kubeschema.Node, path kpath, rp string) (check, error) {
	e, i := w.fresh(singular(rp)), w.fresh("i")
	defer w.release(e)
	defer w.release(i)
	name := &listName{}
	path = path.namedBy(name)
	elem, err := w.mapPattern(p, w.b.Ident(e), items, path.index(w.b.Ident(i)), rp+"[]")
	if err != nil {
		return check{}, err
	}
	failuresOn := func(target celbuild.Expr) celbuild.Expr {
		return w.b.TransformList(target, i, e, elem.failed(w.b), elem.fail())
	}
	failures := func() celbuild.Expr { return failuresOn(v) }
	fail := func() celbuild.Expr { return w.b.Index(failures(), w.b.Int(0)) }
	if elem.skip == nil {
		return check{ok: w.b.All(v, e, elem.ok), fail: fail, failures: failures,
			list: &listCheck{target: v, field: lastField(rp), elem: e, pred: elem.ok, failuresOn: failuresOn, name: name}}, nil
	}
	// validateArrayOfMaps: the first element that fails fails the list;
	// an element that skips is passed over; all skipping skips it.
	bad := w.b.Exists(v, e, elem.failed(w.b))
	skip := w.b.And(w.b.Compare(">", w.b.Size(v), w.b.Int(0)), w.b.All(v, e, elem.skip))
	return check{ok: w.b.And(w.b.Not(bad), w.b.Not(skip)), skip: skip, bad: bad, fail: fail, failures: failures}, nil
}

// lastField is the last field name of a schema path.
func lastField(rp string) string {
	return strings.TrimSuffix(rp[strings.LastIndex(rp, ".")+1:], "[]")
}

// mapPattern is validateMap without anchors that skip: the equality and
// negation anchors (sorted by key), then the other keys (those holding
// anchors first, in reverse order); the first failure in that order is
// the map's.
func (w *walk) mapPattern(p map[string]any, v celbuild.Expr, n kubeschema.Node, path kpath, rp string) (check, error) {
	var checks []check
	for _, k := range kyvernoOrder(p) {
		c, err := w.key(k, p[k], v, n, path, rp)
		if err != nil {
			return check{}, err
		}
		checks = append(checks, c)
	}
	return w.firstFailure(checks), nil
}

// firstFailure is the conjunction of checks, failing with the first
// failing one's path.
func (w *walk) firstFailure(checks []check) check {
	if len(checks) == 1 {
		return checks[0]
	}
	var kept, failing []check
	for _, c := range checks {
		if !celbuild.IsTrue(c.ok) {
			kept = append(kept, c)
		}
		if !celbuild.IsTrue(c.ok) && !celbuild.IsFalse(c.bad) {
			failing = append(failing, c)
		}
	}
	oks := w.mergeLists(kept)
	// The map's failure is its first check that does not pass, which
	// fails (one that skips would have skipped the map): a conditional
	// anchor, which never fails, is passed over.
	fail := func() celbuild.Expr {
		if len(failing) == 0 {
			return w.b.String("")
		}
		out := failing[len(failing)-1].fail()
		for i := len(failing) - 2; i >= 0; i-- {
			out = w.b.Ternary(w.b.Not(failing[i].ok), failing[i].fail(), out)
		}
		return out
	}
	out := check{ok: w.b.And(oks...), fail: fail}
	if slices.ContainsFunc(failing, func(c check) bool { return c.failures != nil }) {
		// Lists among the checks: the first failure is the first of the
		// checks' failures, concatenated in order.
		out.failures = func() celbuild.Expr {
			var all celbuild.Expr
			for k := 0; k < len(failing); {
				c := failing[k]
				f := c.failures
				n := 1
				if shared, m := w.sharedFailures(failing[k:]); m > 1 {
					f, n = func() celbuild.Expr { return shared }, m
				}
				if f == nil {
					f = func() celbuild.Expr { return w.b.Ternary(c.failed(w.b), w.b.List(c.fail()), w.b.List()) }
				}
				if all == nil {
					all = f()
				} else {
					all = w.b.Add(all, f())
				}
				k += n
			}
			return all
		}
		out.fail = func() celbuild.Expr { return w.b.Index(out.failures(), w.b.Int(0)) }
	}
	out.skip, out.bad = w.firstNonOK(kept)
	return out
}

// sharedFailures lists the failures of the lists that open checks and
// check their elements alike (spec.ephemeralContainers, initContainers and
// containers), in that order, as one comprehension over the lists, the
// list's name read from a list of the names:
//
//	[object.spec.?ephemeralContainers.orValue([]), object.spec.containers]
//	  .transformList(k, containers, containers.transformList(i, container, <fails>,
//	    "/spec/" + ["ephemeralContainers", "containers"][k] + "/" + string(i) + "/image/"))
//	  .flatten()
//
// n is how many of checks it covers; below 2 it covers none.
func (w *walk) sharedFailures(checks []check) (out celbuild.Expr, n int) {
	key := func(c check) string {
		if c.list == nil || c.failures == nil || c.list.name == nil {
			return ""
		}
		return c.list.elem + "\x00" + w.b.MustPrint(c.list.pred)
	}
	first := key(checks[0])
	if first == "" {
		return nil, 0
	}
	n = 1
	for n < len(checks) && key(checks[n]) == first {
		n++
	}
	if n < 2 {
		return nil, 0
	}
	lists := checks[:n]
	var names, targets []celbuild.Expr
	for _, c := range lists {
		names = append(names, w.b.String(c.list.field))
		targets = append(targets, c.list.target)
	}
	// The outer comprehension's names must not be read inside it.
	pick := func(base string, taken ...string) string {
		name := base
		for i := 2; ; i++ {
			free := !w.names[name] && !reservedName[name] && !slices.Contains(taken, name)
			for _, c := range lists {
				free = free && w.b.Uses(c.list.pred, name) == 0
			}
			if free {
				return name
			}
			name = base + strconv.Itoa(i)
		}
	}
	plural := pick(lists[0].list.elem+"s", lists[0].list.elem)
	index := pick("k", lists[0].list.elem, plural)
	var body celbuild.Expr
	var text string
	for i, c := range lists {
		c.list.name.as = w.b.Index(w.b.List(names...), w.b.Ident(index))
		e := c.list.failuresOn(w.b.Ident(plural))
		c.list.name.as = nil
		t := w.b.MustPrint(e)
		if i == 0 {
			body, text = e, t
			continue
		}
		if t != text || w.b.Uses(e, index) != 1 {
			return nil, 0
		}
	}
	if w.b.Uses(body, index) != 1 || w.b.Uses(body, plural) != 1 {
		// The name is not in the failure paths (nothing would tell the
		// lists apart), or the body reads a variable of the same name.
		return nil, 0
	}
	return w.b.Member("flatten", w.b.TransformList(w.b.List(targets...), index, plural, nil, body)), n
}

// firstNonOK is when the first check that does not pass skips, and when
// it fails; both nil when no check can skip (the checks fail when they do
// not all pass). The checks after the last one that can skip are taken
// together: one of them fails.
func (w *walk) firstNonOK(checks []check) (skip, bad celbuild.Expr) {
	last := -1
	for i, c := range checks {
		if c.skip != nil {
			last = i
		}
	}
	if last < 0 {
		return nil, nil
	}
	var skips, bads, prefix []celbuild.Expr
	for _, c := range checks[:last+1] {
		if c.skip != nil {
			skips = append(skips, w.b.And(append(append([]celbuild.Expr(nil), prefix...), c.skip)...))
		}
		bads = append(bads, w.b.And(append(append([]celbuild.Expr(nil), prefix...), c.failed(w.b))...))
		prefix = append(prefix, c.ok)
	}
	var rest []celbuild.Expr
	for _, c := range checks[last+1:] {
		rest = append(rest, c.ok)
	}
	if len(rest) > 0 {
		bads = append(bads, w.b.And(append(prefix, w.b.Not(w.b.And(rest...)))...))
	}
	return w.b.Or(skips...), w.b.Or(bads...)
}

// key is one key of a map pattern on the map v.
func (w *walk) key(k string, pv any, v celbuild.Expr, n kubeschema.Node, path kpath, rp string) (check, error) {
	a := anchorOf(k)
	child, known, present := w.field(n, a.key)
	crp := ir.SchemaPath(rp, a.key)
	if known {
		w.t.read(crp, child.Shape().String(), present)
		present = present || w.known[crp]
	} else {
		w.t.read(crp, ir.SchemaAbsent, false)
	}
	cpath := path.key(a.key)
	switch a.kind {
	case anchorCondition:
		return w.conditional(pv, v, a.key, child, known, present, cpath, crp)
	case anchorNegation:
		if !known {
			return w.constant(true, cpath), nil
		}
		return check{ok: w.b.Not(w.b.Has(v, a.key)), fail: func() celbuild.Expr { return cpath.expr(w.b) }}, nil
	case anchorEquality:
		if !known {
			return w.constant(true, cpath), nil
		}
		c, err := w.element(pv, w.b.Select(v, a.key), child, cpath, crp)
		if err != nil || present {
			return c, err
		}
		return w.optional(c, v, a.key), nil
	}
	if s, ok := pv.(string); ok && strings.Contains(s, "{{") {
		return w.dynamicKey(s, v, a.key, child, known, present, path, cpath, crp)
	}
	if pv == "*" {
		if !known {
			return w.constant(false, path), nil
		}
		if present {
			return w.constant(true, path), nil
		}
		return check{ok: w.b.Has(v, a.key), fail: func() celbuild.Expr { return path.expr(w.b) }}, nil
	}
	absentOK, err := missing(pv)
	if err != nil {
		return check{}, notTyped("%s: %v", crp, err)
	}
	if !known {
		return w.constant(absentOK, cpath), nil
	}
	c, err := w.element(pv, w.b.Select(v, a.key), child, cpath, crp)
	if err != nil || present {
		return c, err
	}
	if absentOK {
		return w.optional(c, v, a.key), nil
	}
	return w.required(c, v, a.key, cpath), nil
}

// conditional is a conditional anchor (k): the map skips unless k is
// there and matches (a raw anchor error: it never fails the map).
func (w *walk) conditional(pv any, v celbuild.Expr, key string, child kubeschema.Node, known, present bool, path kpath, rp string) (check, error) {
	if !known {
		return check{ok: w.b.Bool(false), skip: w.b.Bool(true), bad: w.b.Bool(false), fail: func() celbuild.Expr { return path.expr(w.b) }}, nil
	}
	c, err := w.element(pv, w.b.Select(v, key), child, path, rp)
	if err != nil {
		return check{}, err
	}
	if !present {
		c = w.required(c, v, key, path)
	}
	return check{ok: c.ok, skip: w.b.Not(c.ok), bad: w.b.Bool(false), fail: c.fail}, nil
}

// optional is c, the check of v's key, on a key that passes when absent.
func (w *walk) optional(c check, v celbuild.Expr, key string) check {
	if out, ok := w.chained(c, v, key, true); ok {
		return out
	}
	if l := c.list; l != nil && w.b.Same(l.target, w.b.Select(v, key)) {
		target := w.b.OrValue(w.b.OptionalSelect(v, key), w.b.List())
		failures := func() celbuild.Expr { return l.failuresOn(target) }
		return check{ok: w.b.All(target, l.elem, l.pred), fail: c.fail, failures: failures,
			list: &listCheck{target: target, field: l.field, elem: l.elem, pred: l.pred, failuresOn: l.failuresOn, name: l.name}}
	}
	return check{ok: w.b.Or(w.b.Not(w.b.Has(v, key)), c.ok), fail: c.fail}
}

// required is c, the check of v's key, on a key that fails at path when
// absent.
func (w *walk) required(c check, v celbuild.Expr, key string, path kpath) check {
	if out, ok := w.chained(c, v, key, false); ok {
		out.fail = w.absentFail(c, v, key, path)
		return out
	}
	has := w.b.Has(v, key)
	out := check{ok: w.b.And(has, c.ok), fail: w.absentFail(c, v, key, path)}
	if c.skip != nil {
		out.skip, out.bad = w.b.And(has, c.skip), w.b.Or(w.b.Not(has), c.failed(w.b))
	}
	return out
}

func (w *walk) absentFail(c check, v celbuild.Expr, key string, path kpath) func() celbuild.Expr {
	return func() celbuild.Expr { return w.b.Ternary(w.b.Has(v, key), c.fail(), path.expr(w.b)) }
}

// chained writes a scalar predicate reached through keys that all decide
// alike when absent as an optional chain to the value, with a default the
// predicate decides as an absent key is decided:
// !c.?securityContext.?privileged.orValue(false).
func (w *walk) chained(c check, v celbuild.Expr, key string, absent bool) (check, bool) {
	l := c.leaf
	if l == nil || len(l.keys) > 0 && l.absent != absent || !w.b.Same(l.root, w.b.Select(v, key)) {
		return check{}, false
	}
	d := l.dflt(absent)
	if d == nil {
		return check{}, false
	}
	grown := &chain{root: v, keys: append([]string{key}, l.keys...), pred: l.pred, absent: absent, dflt: l.dflt}
	value := v
	for _, k := range grown.keys {
		value = w.b.OptionalSelect(value, k)
	}
	return check{ok: l.pred(w.b.OrValue(value, d)), fail: c.fail, leaf: grown}, true
}

// field is the schema of key in the map node n: known is false for a
// property the schema does not have (the API server drops it, so it is
// never there); present says every object has it.
func (w *walk) field(n kubeschema.Node, key string) (child kubeschema.Node, known, present bool) {
	if n.Shape() == kubeschema.Map {
		return n.Values(), true, false
	}
	child, ok := n.Field(key)
	if !ok {
		return kubeschema.Node{}, false, false
	}
	return child, true, n.AlwaysPresent(key)
}

// fresh is a variable name not in scope, from base.
func (w *walk) fresh(base string) string {
	name := base
	for i := 2; w.names[name] || reservedName[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	w.names[name] = true
	return name
}

func (w *walk) release(name string) { delete(w.names, name) }

// reservedName are the names an admission policy's expressions see.
var reservedName = map[string]bool{"object": true, "oldObject": true, "request": true, "params": true, "namespaceObject": true,
	"authorizer": true, "variables": true, "cel": true, "x": true, "v": true, "in": true}

// singular names an element of the list at schema path rp by the last
// word of its name: spec.initContainers holds a container; a name that is
// no CEL identifier (a map's key, data.pull-policy) holds an item.
func singular(rp string) string {
	last := lastField(rp)
	for i := len(last) - 1; i > 0; i-- {
		if last[i] >= 'A' && last[i] <= 'Z' {
			last = strings.ToLower(last[i:i+1]) + last[i+1:]
			break
		}
	}
	switch {
	case !pattern.IsIdent(last):
		return "item"
	case strings.HasSuffix(last, "ies") && len(last) > 3:
		return last[:len(last)-3] + "y"
	case strings.HasSuffix(last, "s") && len(last) > 1:
		return last[:len(last)-1]
	}
	return last + "Item"
}

// kyvernoOrder is the order validateMap evaluates a map's keys in: the
// anchors sorted by key, then the other keys sorted, those holding
// anchors moved to the front in reverse order.
func kyvernoOrder(p map[string]any) []string {
	var anchors, plain []string
	for k := range p {
		if anchorOf(k).kind != anchorNone {
			anchors = append(anchors, k)
		} else {
			plain = append(plain, k)
		}
	}
	sort.Strings(anchors)
	sort.Strings(plain)
	var front, back []string
	for _, k := range plain {
		if hasAnchors(p[k]) {
			front = append([]string{k}, front...)
		} else {
			back = append(back, k)
		}
	}
	return append(append(anchors, front...), back...)
}

func hasAnchors(p any) bool {
	switch pt := p.(type) {
	case map[string]any:
		for k, v := range pt {
			if anchorOf(k).kind != anchorNone || hasAnchors(v) {
				return true
			}
		}
	case []any:
		for _, v := range pt {
			if hasAnchors(v) {
				return true
			}
		}
	}
	return false
}

// missing is Kyverno's outcome for a pattern on a missing value: a map or
// a list fails; a scalar is pattern.Validate(nil).
func missing(p any) (bool, error) {
	switch p.(type) {
	case map[string]any, []any:
		return false, nil
	}
	pred, err := pattern.Predicate(p, "x")
	if err != nil {
		return false, err
	}
	return evalBool(pred, "x", nil)
}

// listOrder is the order lists checked as one are joined in: as a pod
// spec lists its containers.
var listOrder = map[string]int{"containers": 0, "initContainers": 1, "ephemeralContainers": 2}

// mergeLists are the oks of checks, those that check lists with the same
// predicate over the same element name joined into one check of the
// lists' concatenation, at the place of the first.
func (w *walk) mergeLists(checks []check) []celbuild.Expr {
	groups := map[string][]*listCheck{}
	var keys []string
	for _, c := range checks {
		if c.list == nil {
			continue
		}
		k := c.list.elem + "\x00" + w.b.MustPrint(c.list.pred)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c.list)
	}
	merged := map[*listCheck]celbuild.Expr{}
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		sorted := append([]*listCheck(nil), g...)
		sort.SliceStable(sorted, func(i, j int) bool { return rank(sorted[i].field) < rank(sorted[j].field) })
		target := sorted[0].target
		fields := []string{sorted[0].field}
		for _, l := range sorted[1:] {
			target = w.b.Add(target, l.target)
			fields = append(fields, l.field)
		}
		target = w.t.containerLists(target, fields)
		merged[g[0]] = w.b.All(target, g[0].elem, g[0].pred)
		for _, l := range g[1:] {
			merged[l] = nil
		}
	}
	var oks []celbuild.Expr
	for _, c := range checks {
		switch m, ok := merged[c.list]; {
		case c.list != nil && ok && m == nil:
		case c.list != nil && ok:
			oks = append(oks, m)
		default:
			oks = append(oks, c.ok)
		}
	}
	return oks
}

func rank(field string) int {
	if r, ok := listOrder[field]; ok {
		return r
	}
	return len(listOrder)
}
