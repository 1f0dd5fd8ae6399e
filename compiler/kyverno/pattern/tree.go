package pattern

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Outcome words of the CEL translation. Inside the tree a result also keeps
// what Kyverno's error classification needs further up:
//
//	'pass'                     the element matched
//	'skip'                     validate.PatternError{Skip: true}: every
//	                           conditional anchor of a map, or every element
//	                           of a list, was not satisfied
//	'skip-anchor'              a raw conditional or global anchor error, which
//	                           in a parent's anchor phase silences the failures
//	                           of the anchors after it
//	'fail /path/'              a mismatch at path
//	'fail-negation /path/'     a negation anchor matched
const (
	wordSkipAnchor = "skip-anchor"
	wordNegation   = "fail-negation"
)

// translator turns one pattern into CEL; it hands out fresh variable names.
type translator struct {
	vars      int
	listDepth int
	// tracked numbers the conditional and existence anchor keys whose
	// observations outcomes carry (outcome.go); nil when there are none.
	tracked map[string]int
	// resolve reads pattern values with {{ }} variables (nil: refused);
	// values are those read so far, bound around the result.
	resolve Resolve
	values  []dynamicValue
}

func (t *translator) fresh() string {
	t.vars++
	return fmt.Sprintf("x%d", t.vars)
}

// context says how Kyverno treats the map being translated.
type context struct {
	// underMetadata: the map is the value of a "metadata" key, so its
	// labels and annotations maps have their wildcard keys expanded
	// (wildcards.ExpandInMetadata).
	underMetadata bool
	// expandKeys: the map is such a labels or annotations map.
	expandKeys bool
}

// element is validateResourceElement: the outcome of the resource value v
// (any CEL expression) against pattern p at Kyverno path path.
func (t *translator) element(p any, v string, path kpath, fp *field.Path, c context) (string, error) {
	switch pt := p.(type) {
	case map[string]any:
		return t.withIdent(v, func(x string) (string, error) { return t.mapPattern(pt, x, path, fp, c) })
	case []any:
		return t.withIdent(v, func(x string) (string, error) { return t.listPattern(pt, x, path, fp) })
	case string, float64, int, int64, bool, nil:
		return t.scalarElement(pt, v, path, fp)
	}
	return "", errorf(fp, "unsupported pattern value of type %T", p)
}

// withIdent binds v to a fresh variable unless it already is one.
func (t *translator) withIdent(v string, body func(x string) (string, error)) (string, error) {
	if IsIdent(v) {
		return body(v)
	}
	x := t.fresh()
	b, err := body(x)
	if err != nil {
		return "", err
	}
	return bind(x, v, b), nil
}

// IsIdent says s is a CEL identifier.
func IsIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// scalarElement is validateResourceElement for a scalar pattern: a list
// resource matches when every element does (an empty list matches).
func (t *translator) scalarElement(p any, v string, path kpath, fp *field.Path) (string, error) {
	s, err := t.dynamicValue(p, fp)
	if err != nil {
		return "", err
	}
	if s != "" {
		// A value Kyverno substitutes is read before the resource's; its
		// predicate is long, so a list and a single value share it.
		pred := valuePredicate(s)
		e, x := t.fresh(), t.fresh()
		test := "(type(" + x + ") == list ? " + x + " : [" + x + "]).all(" + e + ", " + pred(e) + ")"
		out := bind(x, v, test+" ? "+t.word("pass")+" : "+t.at(path, "fail"))
		return "(" + unreadable(s) + ") ? " + NotRead() + " : " + out, nil
	}
	pred, err := scalarPredicate(p, fp)
	if err != nil {
		return "", err
	}
	return t.scalarElementWith(pred, v, path)
}

func (t *translator) scalarElementWith(pred predicate, v string, path kpath) (string, error) {
	e := t.fresh()
	test := func(x string) string {
		return "(type(" + x + ") == list ? " + x + ".all(" + e + ", " + pred(e) + ") : " + pred(x) + ")"
	}
	out := test("\x00")
	body := func(x string) string { return test(x) + " ? " + t.word("pass") + " : " + t.at(path, "fail") }
	if strings.Count(out, "\x00") == 1 || IsIdent(v) {
		return body(v), nil
	}
	x := t.fresh()
	return bind(x, v, body(x)), nil
}

// listPattern is validateArray: a list of maps checks every element against
// the first pattern map (an element that skips is ignored, all skipping
// skips; the first failing element ends it); a list of scalars checks every
// element against the first scalar.
func (t *translator) listPattern(p []any, v string, path kpath, fp *field.Path) (string, error) {
	notList := t.at(path, "fail")
	if len(p) == 0 {
		return notList, nil
	}
	var body string
	switch first := p[0].(type) {
	case map[string]any:
		i, e := t.fresh(), t.fresh()
		t.listDepth++
		elem, err := t.mapPattern(first, e, path.index(i), fp.Index(0), context{})
		t.listDepth--
		if err != nil {
			return "", err
		}
		body = t.listOutcome(v + ".transformList(" + i + ", " + e + ", " + elem + ")")
	case string, float64, int, int64, bool, nil:
		s, err := t.scalarElement(first, v, path, fp.Index(0))
		if err != nil {
			return "", err
		}
		body = s
	case []any:
		return "", errorf(fp.Index(0), "a list of lists is not translated (Kyverno compares it position by position and reports a length mismatch as an engine error)")
	default:
		return "", errorf(fp.Index(0), "unsupported pattern value of type %T", first)
	}
	return ternary("type("+v+") == list", body, notList), nil
}

// listOutcome is validateArrayOfMaps over the elements' outcomes: the first
// failure, else 'skip' when there are elements and all skipped, else 'pass'.
func (t *translator) listOutcome(outs string) string {
	os := t.fresh()
	rest := "[" + os + ".size() > 0 && " + os + ".all(o, o.startsWith('skip')) ? " + t.word("skip") + " : " + t.word("pass") + "]"
	if t.tracked == nil {
		return bind(os, outs, "("+os+".filter(o, o.startsWith('fail')) + "+rest+")[0]")
	}
	k := t.fresh()
	before := os + ".transformList(i, o, i < " + k + " ? " + t.obsOf("o") + " : '').join('')"
	body := k + " < 0 ? " + plus(rest+"[0]", t.obsAll(os)) + " : " + os + "[" + k + "] + " + before
	return bind(os, outs, bind(k, os+".map(o, o.startsWith('fail')).indexOf(true)", body))
}

// errorf builds an *Error at fp.
func errorf(fp *field.Path, format string, args ...any) *Error {
	return &Error{Path: fp.String(), Reason: fmt.Sprintf(format, args...)}
}
