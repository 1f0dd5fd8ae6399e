package podsecurity

import (
	"regexp"
	"strings"
)

// A record is one field error of a check, as a CEL list: [field, the rest
// of the error as Kyverno's FormatChecksPrint writes it after the field,
// the raw bad value, the starred field, the container name ('' at pod
// level), then the bad values Kyverno's extractBadValues matches exclusion
// values against]. A check no exclusion covers needs only the field and
// the rest to print its records, and the raw value when its reason reads
// it (appArmorProfile), so its records stop there (recorder). A check that
// fails without field errors (hostProbesAndHostLifecycle) is one record
// whose field is empty: it is printed as nothing and no exclusion removes
// it.

// Record slots.
const (
	slotField   = 0
	slotRest    = 1
	slotRaw     = 2
	slotStarred = 3
	slotName    = 4
	slotValues  = 5
)

// A recorder builds the records of one check.
type recorder struct {
	// full records have every slot, for an exclusion to read; raw ones
	// stop after the raw value, for the check's reason to read; the
	// others after the rest.
	full, raw bool
}

// record builds a record of the field error at f from CEL expressions:
// the container name, the rest of the error, the raw bad value, and a CEL
// list of the bad values.
func (r recorder) record(f fieldAt, name, rest, raw, values string) string {
	slots := []string{str(f.field), rest}
	if r.raw || r.full {
		slots = append(slots, str(raw))
	}
	if !r.full {
		return "[" + strings.Join(slots, ", ") + "]"
	}
	out := "[" + strings.Join(append(slots, str(f.starred), str(name)), ", ") + "]"
	if values != "[]" {
		out += " + " + values
	}
	return out
}

// fieldAt is a field under a container's path p (its starred path ps).
type fieldAt struct{ field, starred string }

func containerField(k, suffix string) fieldAt {
	return fieldAt{k + ".p + " + q(suffix), k + ".ps + " + q(suffix)}
}

func podField(path string) fieldAt { return fieldAt{q(path), q(path)} }

const forbiddenValues = "' is forbidden, forbidden values found: '"

// required is field.Required(path, ""): "F: Required value".
func (r recorder) required(f fieldAt, name string) string {
	return r.record(f, name, "': Required value'", "''", "[]")
}

// forbiddenString is a Forbidden error whose bad value is the CEL string
// v: "F: Forbidden" when v is empty, else "F is forbidden, forbidden values
// found: v".
func (r recorder) forbiddenString(f fieldAt, name, v string) string {
	return bound(v, func(v string) string {
		return r.record(f, name, "("+v+" == '' ? ': Forbidden' : "+concat(forbiddenValues, v)+")", v, "("+v+" == '' ? [] : ["+str(v)+"])")
	})
}

// forbiddenValue is forbiddenString where v is never empty.
func (r recorder) forbiddenValue(f fieldAt, name, v string) string {
	return bound(v, func(v string) string {
		return r.record(f, name, concat(forbiddenValues, v), v, "["+str(v)+"]")
	})
}

// bound is the record body writes with the bad value v, read once: with
// v itself when it is a name or a literal or read once, else with v bound
// to the name val (the API server's CEL has no cel.bind; a one-element
// list's map stands in).
func bound(v string, body func(string) string) string {
	if simpleName.MatchString(v) || plainLiteralText(v) || strings.Count(body(v), v) < 2 {
		return body(v)
	}
	return "[" + v + "].map(val, " + body("val") + ")[0]"
}

var simpleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// plainLiteralText says v is one string literal.
func plainLiteralText(v string) bool {
	_, ok := plainLiteral(v)
	return ok
}

// forbiddenText is a Forbidden error whose bad value prints as the CEL
// string text (a bool, an int) and matches as text.
func (r recorder) forbiddenText(f fieldAt, name, text string) string {
	return bound(text, func(text string) string {
		return r.record(f, name, concat(forbiddenValues, text), text, "["+str(text)+"]")
	})
}

// forbiddenList is a Forbidden error whose bad value is a []string (a CEL
// list of strings), printed by %+v as [A B].
func (r recorder) forbiddenList(f fieldAt, name, list string) string {
	return r.record(f, name, "' is forbidden, forbidden values found: [' + "+list+".join(' ') + ']'", "''", list)
}

// forbiddenEmpty is field.Forbidden(path, "") left as it is: its bad
// value is "", so it prints "F: Forbidden".
func (r recorder) forbiddenEmpty(f fieldAt, name string) string {
	return r.record(f, name, "': Forbidden'", "''", "[]")
}

// noFieldErrors is the record of a check that fails without field errors.
func (r recorder) noFieldErrors() string {
	return r.record(fieldAt{"''", "''"}, "''", "''", "''", "[]")
}

// str is the CEL string e, typed string for a list literal of strings
// (the API server's CEL wants its elements of one type): e itself when it
// starts or ends with a literal (it is one, or a concatenation with one).
func str(e string) string {
	if strings.HasPrefix(e, "'") || strings.HasSuffix(e, "'") || strings.HasPrefix(e, "string(") && strings.HasSuffix(e, ")") {
		return e
	}
	return "string(" + e + ")"
}

// concat is the CEL string a + b, one literal when both are literals
// (quoted as q quotes, with no quote or backslash inside).
func concat(a, b string) string {
	if x, ok := plainLiteral(a); ok {
		if y, ok := plainLiteral(b); ok {
			return q(x + y)
		}
	}
	return a + " + " + b
}

func plainLiteral(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	inner := s[1 : len(s)-1]
	if strings.ContainsAny(inner, `'\`) {
		return "", false
	}
	return inner, true
}

// perContainer is the records of body (CEL list of records over the
// container record k) for each container of view v.
func perContainer(v, body string) string {
	return v + ".k.map(k, " + body + ").flatten()"
}

// when is cond ? [rec] : [].
func when(cond, rec string) string { return "(" + cond + " ? [" + rec + "] : [])" }

// whenValue is when over the value v that both the condition and the
// record read: read once (bound).
func whenValue(v string, cond, rec func(v string) string) string {
	return bound(v, func(v string) string { return when(cond(v), rec(v)) })
}
