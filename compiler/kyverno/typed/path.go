package typed

import (
	"github.com/admitc/admitc/internal/celbuild"
)

// kpath is a Kyverno failure path being built ("/spec/containers/0/"):
// literal parts and the CEL index of a list element, bound by the
// message that reads it.
type kpath struct{ parts []pathPart }

type pathPart struct {
	lit   string
	index celbuild.Expr
	// list, on the key of a list whose elements' paths are being built,
	// lets the list's name be written by an expression instead
	// (listName.as): lists checked alike share one failure path.
	list *listName
}

// listName is a list key of a path: as, when set, is the CEL string the
// path writes for it.
type listName struct{ as celbuild.Expr }

// namedBy marks the last part of p, a list's key, as written by name.
func (p kpath) namedBy(name *listName) kpath {
	out := p.with()
	if n := len(out.parts); n > 0 && out.parts[n-1].index == nil {
		out.parts[n-1].list = name
	}
	return out
}

// key appends a map key ("" for the root: "/").
func (p kpath) key(k string) kpath {
	return p.with(pathPart{lit: k + "/"})
}

// index appends a list index.
func (p kpath) index(i celbuild.Expr) kpath {
	return p.with(pathPart{index: i}, pathPart{lit: "/"})
}

func (p kpath) with(parts ...pathPart) kpath {
	out := make([]pathPart, 0, len(p.parts)+len(parts))
	return kpath{parts: append(append(out, p.parts...), parts...)}
}

// expr is the path as a CEL string, literal parts joined.
func (p kpath) expr(b *celbuild.Builder) celbuild.Expr {
	var out celbuild.Expr
	lit := ""
	flush := func() {
		if lit == "" {
			return
		}
		out = add(b, out, b.String(lit))
		lit = ""
	}
	for _, part := range p.parts {
		if part.list != nil && part.list.as != nil {
			flush()
			out = add(b, out, part.list.as)
			lit = "/"
			continue
		}
		if part.index == nil {
			lit += part.lit
			continue
		}
		flush()
		out = add(b, out, b.Call("string", part.index))
	}
	flush()
	if out == nil {
		return b.String("")
	}
	return out
}

func add(b *celbuild.Builder, x, y celbuild.Expr) celbuild.Expr {
	if x == nil {
		return y
	}
	return b.Add(x, y)
}
