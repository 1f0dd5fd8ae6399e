package pattern

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// referenceRegex and escapedReferenceRegex are Kyverno's
// regex.RegexReferences and regex.RegexEscpReferences.
var (
	referenceRegex        = regexp.MustCompile(`^\$\(.[^\ ]*\)|[^\\]\$\(.[^\ ]*\)`)
	escapedReferenceRegex = regexp.MustCompile(`\\\$\(.[^\ \)]*\)`)
)

// referenceOperators are the operators a reference may start with
// (operator.GetOperatorFromStringPattern, longest first); a reference
// without one is Equal and keeps the referenced value's type.
var referenceOperators = []string{">=", "<=", ">", "<", "!"}

// resolveReferences substitutes the $( ) references of a pattern document
// as Kyverno's substituteReferences does before matching
// (pkg/engine/variables/vars.go): a reference names another place of the
// pattern document itself (relative to the value that holds it, anchors
// ignored), so the substitution is static. With an operator the referenced
// scalar is written as text after it (a number as Go's %f); without one
// the referenced value must be a string. Escaped \$( ) references lose their backslash. What Kyverno
// fails to substitute (a reference to nothing, to a map or list) fails the
// rule on every resource; it is refused here.
// ResolveReferences is resolveReferences for a pattern document at the
// field path at (validate.pattern, validate.anyPattern): the document
// with its references substituted, as the exact translation and Kyverno
// match it.
func ResolveReferences(doc any, at string) (any, error) {
	return resolveReferences(doc, field.NewPath(at))
}

func resolveReferences(doc any, fp *field.Path) (any, error) {
	return resolveIn(doc, doc, "", fp)
}

func resolveIn(doc, v any, at string, fp *field.Path) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if referenceRegex.MatchString(k) || escapedReferenceRegex.MatchString(k) {
				return nil, errorf(fp.Child(k), "references $( ) in pattern keys are not translated")
			}
			r, err := resolveIn(doc, e, at+"/"+strings.ReplaceAll(k, "/", `\/`), fp.Child(k))
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := resolveIn(doc, e, at+"/"+strconv.Itoa(i), fp.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case string:
		return resolveString(doc, t, at, fp)
	}
	return v, nil
}

func resolveString(doc any, value, at string, fp *field.Path) (any, error) {
	for _, ref := range referenceRegex.FindAllString(value, -1) {
		old := ref
		prefix := ""
		if ref[:2] != "$(" {
			prefix, ref = ref[:1], ref[1:]
		}
		resolved, err := resolveReference(doc, ref, at)
		if err != nil {
			return nil, errorf(fp, "the reference %s %v: Kyverno fails the rule on every resource", ref, err)
		}
		s, ok := resolved.(string)
		if !ok {
			return nil, errorf(fp, "the reference %s names a %T, which Kyverno does not substitute: it fails the rule on every resource", ref, resolved)
		}
		value = strings.Replace(value, old, prefix+s, 1)
	}
	for _, e := range escapedReferenceRegex.FindAllString(value, -1) {
		value = strings.ReplaceAll(value, e, e[1:])
	}
	return value, nil
}

// resolveReference is Kyverno's resolveReference: the operator, then the
// path (relative to at) of a leaf of doc, anchors removed from its keys.
func resolveReference(doc any, ref, at string) (any, error) {
	p := strings.Trim(ref, "$()")
	op := ""
	if len(p) >= 2 {
		for _, o := range referenceOperators {
			if strings.HasPrefix(p, o) {
				op = o
				break
			}
		}
		if op == "" && (inRange.MatchString(p) || notInRange.MatchString(p)) {
			return nil, fmt.Errorf("starts like a range, which admitc does not translate in a reference")
		}
	}
	p = p[len(op):]
	if p == "" {
		return nil, fmt.Errorf("has no path")
	}
	if !path.IsAbs(p) {
		p = path.Join(at, p)
	}
	found, n := leafAt(doc, "", p)
	switch {
	case n == 0:
		return nil, fmt.Errorf("names no value of the pattern (%s)", p)
	case n > 1:
		return nil, fmt.Errorf("names a map of the pattern (%s), whose keys Kyverno visits in random order", p)
	}
	if op == "" {
		return found, nil
	}
	switch x := found.(type) {
	case string:
		return op + x, nil
	case float64:
		return op + fmt.Sprintf("%f", x), nil
	case int64: // Kyverno's document is JSON: every number is a float64
		return op + fmt.Sprintf("%f", float64(x)), nil
	case int:
		return op + fmt.Sprintf("%f", float64(x)), nil
	}
	return nil, fmt.Errorf("names a %T, which the operator %s does not take", found, op)
}

// inRange and notInRange are operator.InRangeRegex and NotInRangeRegex.
var (
	inRange    = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	notInRange = regexp.MustCompile(`^([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-|\+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
)

// leafAt finds what Kyverno's getValueFromReference finds at path p: the
// leaf there, or the keys of the map there (n counts the candidates);
// keys of doc lose their anchors.
func leafAt(v any, at, p string) (any, int) {
	switch t := v.(type) {
	case map[string]any:
		var found any
		n := 0
		if at == p {
			for k := range t {
				found, n = k, n+1
			}
		}
		for k, e := range t {
			key := strings.ReplaceAll(k, "/", `\/`)
			if !strings.Contains(k, "/") {
				key = stripAnchor(k)
			}
			if f, m := leafAt(e, at+"/"+key, p); m > 0 {
				found, n = f, n+m
			}
		}
		return found, n
	case []any:
		var found any
		n := 0
		for i, e := range t {
			if f, m := leafAt(e, at+"/"+strconv.Itoa(i), p); m > 0 {
				found, n = f, n+m
			}
		}
		return found, n
	}
	if at == p {
		return v, 1
	}
	return nil, 0
}

// stripAnchor is one key without its anchor (anchor.Parse's Key).
func stripAnchor(k string) string {
	for _, prefix := range []string{"+(", "<(", "=(", "X(", "^(", "("} {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, ")") && len(k) > len(prefix) {
			return k[len(prefix) : len(k)-1]
		}
	}
	return k
}
