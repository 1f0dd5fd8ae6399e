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
