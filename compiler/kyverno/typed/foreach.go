package typed

import (
	"strings"

	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
)

// Loop is a foreach entry's list read against the schema: the elements
// Kyverno iterates, as comprehensions over the object's lists. Kyverno
// queries the list on the object as it is (null on DELETE); a key it
// cannot resolve skips the entry, as an absent list iterates nothing
// here, and a null element is skipped.
type Loop struct {
	b    *celbuild.Builder
	gens []qgen
	elem *qpath
	// null is when the list is null (nil: never): no element.
	null celbuild.Expr
}

// ForEachList reads a foreach entry's list query.
func (t *Translator) ForEachList(text string, roots Roots) (*Loop, error) {
	names := map[string]bool{}
	v, err := t.query(text, roots, names)
	if err != nil {
		return nil, err
	}
	q := &query{t: t, b: t.b, roots: roots, text: text, names: names}
	var list *qlist
	switch v.kind {
	case qPath:
		p := v.path
		if p.hasDflt {
			return nil, q.refuse("a foreach list with a default")
		}
		if s := p.shape(); s == kubeschema.Object || s == kubeschema.Map {
			// A value that is not a list is a list of one.
			bare := *p
			bare.strict = false
			return &Loop{b: t.b, elem: &bare, null: negate(t.b, bare.present(t.b))}, nil
		}
		if p.shape() != kubeschema.List {
			return nil, q.refuse("a foreach list that is not a list or an object")
		}
		bare := *p
		bare.strict = false
		l, err := q.asList(qval{kind: qPath, path: &bare})
		if err != nil || l == nil {
			return nil, q.refuse("the foreach list: %v", err)
		}
		if l.null != nil {
			// A missing list (or a key on its way) iterates nothing.
			opt, _ := p.optional(t.b)
			l.gens[0].src = t.b.OrValue(opt, t.b.List())
		}
		list = l
	case qList:
		list = v.list
		if list.mayErr {
			return nil, q.refuse("a foreach list whose filter may fail")
		}
	default:
		return nil, q.refuse("a foreach list of this kind")
	}
	if list.elem.kind != qPath || list.elem.path.hasDflt {
		return nil, q.refuse("foreach elements of this kind")
	}
	out := &Loop{b: t.b, gens: list.gens, elem: list.elem.path, null: list.null}
	if present := out.elem.present(t.b); present != nil {
		out.gens = (&qlist{gens: list.gens}).filtered(t.b, present).gens
	}
	return out, nil
}

// Element is the loop's element, the root of an entry's checks.
func (l *Loop) Element() Root {
	paths := l.elem.schemaPaths()
	// What is known under the element, from the element.
	var known []string
	prefix := keyPath(l.elem.keys...)
	for _, k := range l.elem.known {
		if len(l.elem.keys) == 0 {
			known = append(known, k)
		} else if rest, ok := strings.CutPrefix(k, prefix+"\x00"); ok {
			known = append(known, rest)
		}
	}
	return Root{Expr: l.elem.expr(l.b), Node: l.elem.final(), Path: paths[0], Aliases: paths[1:], Known: known}
}

// Exists is true when pred (over Element) holds for an element.
func (l *Loop) Exists(pred celbuild.Expr) celbuild.Expr { return l.over(pred, false) }

// All is true when pred holds for every element.
func (l *Loop) All(pred celbuild.Expr) celbuild.Expr { return l.over(pred, true) }

func (l *Loop) over(pred celbuild.Expr, all bool) celbuild.Expr {
	body := pred
	for i := len(l.gens) - 1; i >= 0; i-- {
		g := l.gens[i]
		if g.filter != nil {
			if all {
				body = l.b.Or(l.b.Not(g.filter), body)
			} else {
				body = l.b.And(g.filter, body)
			}
		}
		if all {
			body = l.b.All(g.src, g.v, body)
		} else {
			body = l.b.Exists(g.src, g.v, body)
		}
	}
	if l.null != nil {
		if all {
			return l.b.Or(l.null, body)
		}
		return l.b.And(l.b.Not(l.null), body)
	}
	return body
}

// FirstMap is value (over Element) of the first element for which pred
// holds (an error when none does), in Kyverno's order, written
// list.filter(v, pred).map(v, value)[0]: the element is read once, by
// name, however often value reads it. Nil when the elements come from
// nested lists.
func (l *Loop) FirstMap(pred, value celbuild.Expr) celbuild.Expr {
	kept := l.kept(pred)
	if kept == nil {
		return nil
	}
	return l.b.Index(l.b.Map(kept, l.gens[0].v, value), l.b.Int(0))
}

// kept is list.filter(v, pred) of a loop over one list (nil over nested
// lists).
func (l *Loop) kept(pred celbuild.Expr) celbuild.Expr {
	if len(l.gens) != 1 {
		return nil
	}
	g := l.gens[0]
	keep := pred
	if g.filter != nil {
		keep = l.b.And(g.filter, pred)
	}
	return l.b.Filter(g.src, g.v, keep)
}

// FirstOnlyMap is FirstMap where value may fail on a later element for
// which pred holds: the first is taken before value reads it,
// [list.filter(v, pred)[0]].map(v, value)[0].
func (l *Loop) FirstOnlyMap(pred, value celbuild.Expr) celbuild.Expr {
	kept := l.kept(pred)
	if kept == nil {
		return nil
	}
	first := l.b.Index(kept, l.b.Int(0))
	return l.b.Index(l.b.Map(l.b.List(first), l.gens[0].v, value), l.b.Int(0))
}

// Concat is the lists value (a list, over Element) of every element,
// joined in Kyverno's order.
func (l *Loop) Concat(value celbuild.Expr) celbuild.Expr {
	body := value
	for i := len(l.gens) - 1; i >= 0; i-- {
		g := l.gens[i]
		if g.filter != nil {
			body = l.b.Ternary(g.filter, body, l.b.List())
		}
		body = l.b.Member("flatten", l.b.Map(g.src, g.v, body))
	}
	if l.null != nil {
		return l.b.Ternary(l.null, l.b.List(), body)
	}
	return body
}

// Uses says whether e reads the loop's element.
func (l *Loop) Uses(e celbuild.Expr) bool {
	for _, g := range l.gens {
		if l.b.Uses(e, g.v) > 0 {
			return true
		}
	}
	return false
}
