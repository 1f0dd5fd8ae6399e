package typed

import (
	"encoding/json"
	"maps"
	"slices"

	gojmespath "github.com/kyverno/go-jmespath"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/kubeschema"
)

// A rule's context variables (Kyverno's variable entries) are read where
// a query names them, as the value their entry gives (Kyverno's variable
// loader, pkg/engine/context/loaders/variable.go): Value with its {{ }}
// variable substituted, JMESPath applied to it or run on the context,
// Default when the query fails or gives null. An entry sees the entries
// before it. An entry that may fail to load (a value that may be null, a
// query that may fail without a default) fails every query that mentions
// it, in Kyverno's deferred loading order; the typed translation takes
// only entries that always load, whose value is then the same wherever it
// is read.

// SetContext gives the translations the rule's context variables, in the
// rule's order; an entry loaded from outside the request (CEL) other than
// a configMap entry read as params, or named as one of Kyverno's own
// variables, is refused.
func (t *Translator) SetContext(vars []conditions.Variable) error {
	for _, v := range vars {
		if v.CEL != "" && !v.ConfigMap {
			return notTyped("the context entry %s is loaded from outside the request", v.Name)
		}
		if slices.Contains(conditions.PredefinedVariables, v.Name) {
			return notTyped("the context entry %s replaces Kyverno's own variable", v.Name)
		}
		if hasVariable(v.Default) {
			return notTyped("the context entry %s has a default with {{ }} variables", v.Name)
		}
	}
	t.context = vars
	return nil
}

// contextIndex is the index of the visible context entry named name, or
// -1.
func (q *query) contextIndex(name string) int {
	for i := 0; i < q.visible && i < len(q.t.context); i++ {
		if q.t.context[i].Name == name {
			return i
		}
	}
	return -1
}

// loadsMentioned checks that every visible context entry that Kyverno's
// deferred loader loads before running text (any entry text names, even
// one it does not read) always loads: one that may fail fails the query,
// which the typed translation does not write.
func (q *query) loadsMentioned(text string) error {
	for i := 0; i < q.visible && i < len(q.t.context); i++ {
		if conditions.Loads(q.t.context[i].Name, text) {
			// Only checked: its names are not taken.
			check := *q
			check.names = maps.Clone(q.names)
			if _, err := check.contextValue(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// contextValue is the value of the context entry i, which must always
// load.
func (q *query) contextValue(i int) (qval, error) {
	v := q.t.context[i]
	if v.ConfigMap {
		return q.configMapValue(), nil
	}
	sub := &query{t: q.t, b: q.b, roots: q.roots, text: q.text, names: q.names, visible: i}
	var out qval
	var err error
	switch {
	case v.HasValue:
		if out, err = sub.value(v.Value); err != nil {
			return qval{}, err
		}
		if !sub.neverNull(out) {
			return qval{}, q.refuse("the context entry %s: a value that may be null or fail", v.Name)
		}
		if v.JMESPath != "" {
			if err := sub.loadsMentioned(v.JMESPath); err != nil {
				return qval{}, err
			}
			node, err := gojmespath.NewParser().Parse(v.JMESPath)
			if err != nil {
				return qval{}, q.refuse("the context entry %s: %v", v.Name, err)
			}
			if out, err = sub.node(node, out, true); err != nil {
				return qval{}, err
			}
			if !sub.neverNull(out) {
				return qval{}, q.refuse("the context entry %s: a query of its value that may be null or fail", v.Name)
			}
		}
	case v.JMESPath != "":
		if err := sub.loadsMentioned(v.JMESPath); err != nil {
			return qval{}, err
		}
		node, err := gojmespath.NewParser().Parse(v.JMESPath)
		if err != nil {
			return qval{}, q.refuse("the context entry %s: %v", v.Name, err)
		}
		sub.contextQuery = true
		if out, err = sub.node(node, qval{kind: qPseudo, pseudo: "$"}, true); err != nil {
			return qval{}, err
		}
		if !sub.neverNull(out) {
			if !v.HasDefault || v.Default == nil {
				return qval{}, q.refuse("the context entry %s may evaluate to null, which fails it", v.Name)
			}
			if out, err = sub.withDefault(out, v.Default); err != nil {
				return qval{}, err
			}
		}
	default:
		if !v.HasDefault || v.Default == nil {
			return qval{}, q.refuse("the context entry %s evaluates to null", v.Name)
		}
		out = qval{kind: qLit, lit: v.Default}
	}
	if out.kind == qPseudo || out.kind == qMulti {
		return qval{}, q.refuse("the context entry %s is not a value", v.Name)
	}
	return out, nil
}

// configMapValue is a configMap entry's value: the ConfigMap the policy
// reads as params, as Kyverno's loader keeps it ({data, metadata}; data
// missing on a ConfigMap without data). It always loads: the binding's
// paramRef fails a request whose ConfigMap is missing before the policy
// is evaluated, as Kyverno fails the rule (compiler/kyverno/configmap.go).
// Only its data is read typed.
func (q *query) configMapValue() qval {
	n, _ := kubeschema.Builtins().Schema(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	return qval{kind: qPath, path: &qpath{root: q.b.Ident("params"), node: n.Only("data", "metadata"), strict: true, params: true}}
}

// value is an entry's value with its {{ }} variable substituted: a
// string that is one variable is the variable's value; any other {{ }}
// is refused.
func (q *query) value(x any) (qval, error) {
	if s, ok := x.(string); ok {
		if text, ok := wholeVariable(s); ok {
			if err := q.loadsMentioned(text); err != nil {
				return qval{}, err
			}
			node, err := gojmespath.NewParser().Parse(text)
			if err != nil {
				return qval{}, q.refuse("%v", err)
			}
			return q.node(node, qval{kind: qPseudo, pseudo: "$"}, true)
		}
	}
	if hasVariable(x) {
		return qval{}, q.refuse("a context value with {{ }} variables inside it")
	}
	return qval{kind: qLit, lit: x}, nil
}

// neverNull says a value is never null and never fails.
func (q *query) neverNull(v qval) bool {
	switch v.kind {
	case qLit:
		return v.lit != nil
	case qScalar:
		return !v.scalar.mayErr
	case qPath:
		p := v.path
		if p.mayErr() {
			return false
		}
		if p.hasDflt {
			// `|| literal`: the literal where the value is null.
			return p.dflt != nil
		}
		return p.present(q.b) == nil
	case qList:
		return v.list.null == nil && !v.list.mayErr
	}
	return false
}

// withDefault is v, which may be null or fail, with dflt in its place
// then: a field read as an optional chain with orValue, a projection over
// a list that may be missing as the empty list.
func (q *query) withDefault(v qval, dflt any) (qval, error) {
	switch v.kind {
	case qNull:
		return qval{kind: qLit, lit: dflt}, nil
	case qPath:
		p := v.path
		if p.hasDflt {
			break
		}
		lit, ok, err := q.literalOfShape(dflt, p.shape())
		if err != nil {
			return qval{}, err
		}
		if !ok {
			return qval{}, q.refuse("a default that is not of the value's type")
		}
		opt, isOpt := p.optional(q.b)
		if !isOpt {
			return v, nil
		}
		return qval{kind: qScalar, scalar: &qscalar{expr: q.b.OrValue(opt, lit), shape: p.shape()}}, nil
	case qList:
		l, ok := dflt.([]any)
		if !ok || len(l) != 0 || v.list.mayErr {
			break
		}
		return qval{kind: qList, list: v.list.orEmpty()}, nil
	}
	return qval{}, q.refuse("a default for a value of this kind")
}

// literalText is the text Kyverno writes for a constant in a message: a
// string as itself, anything else as its JSON.
func literalText(v any) (string, bool) {
	if s, ok := v.(string); ok {
		return s, true
	}
	data, err := json.Marshal(v)
	return string(data), err == nil
}
