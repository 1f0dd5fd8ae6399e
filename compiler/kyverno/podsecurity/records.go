package podsecurity

// A record is one field error of a check, as a CEL list of strings:
// [field, starred field, container name ('' at pod level), the error as
// Kyverno's FormatChecksPrint writes it, the raw bad value, then the bad
// values Kyverno's extractBadValues matches exclusion values against].
// A check that fails without field errors (hostProbesAndHostLifecycle) is
// one record whose field is empty: it is printed as nothing and no
// exclusion removes it.

// Record slots.
const (
	slotField   = 0
	slotStarred = 1
	slotName    = 2
	slotPrinted = 3
	slotRaw     = 4
	slotValues  = 5
)

// record builds a record from CEL string expressions and a CEL list of
// strings.
func record(field, starred, name, printed, raw, values string) string {
	return "[string(" + field + "), string(" + starred + "), string(" + name + "), string(" + printed + "), string(" + raw + ")] + (" + values + ").map(x, string(x))"
}

// fieldAt is a field under a container's path p (its starred path ps).
type fieldAt struct{ field, starred string }

func containerField(k, suffix string) fieldAt {
	return fieldAt{k + ".p + " + q(suffix), k + ".ps + " + q(suffix)}
}

func podField(path string) fieldAt { return fieldAt{q(path), q(path)} }

// required is field.Required(path, ""): "F: Required value".
func required(f fieldAt, name string) string {
	return record(f.field, f.starred, name, f.field+" + ': Required value'", "''", "[]")
}

// forbiddenString is a Forbidden error whose bad value is the CEL string
// v: "F: Forbidden" when v is empty, else "F is forbidden, forbidden values
// found: v".
func forbiddenString(f fieldAt, name, v string) string {
	printed := "(" + v + " == '' ? " + f.field + " + ': Forbidden' : " + f.field + " + ' is forbidden, forbidden values found: ' + " + v + ")"
	return record(f.field, f.starred, name, printed, v, "("+v+" == '' ? [] : ["+v+"])")
}

// forbiddenText is a Forbidden error whose bad value prints as the CEL
// string text (a bool, an int) and matches as text.
func forbiddenText(f fieldAt, name, text string) string {
	return record(f.field, f.starred, name, f.field+" + ' is forbidden, forbidden values found: ' + "+text, text, "["+text+"]")
}

// forbiddenList is a Forbidden error whose bad value is a []string (a CEL
// list of strings), printed by %+v as [A B].
func forbiddenList(f fieldAt, name, list string) string {
	return record(f.field, f.starred, name, f.field+" + ' is forbidden, forbidden values found: [' + "+list+".join(' ') + ']'", "''", list)
}

// forbiddenEmpty is field.Forbidden(path, "") left as it is: its bad
// value is "", so it prints "F: Forbidden".
func forbiddenEmpty(f fieldAt, name string) string {
	return record(f.field, f.starred, name, f.field+" + ': Forbidden'", "''", "[]")
}

// noFieldErrors is the record of a check that fails without field errors.
const noFieldErrors = "['', '', '', '', '']"

// perContainer is the records of body (CEL list of records over the
// container record k) for each container of view v.
func perContainer(v, body string) string {
	return v + ".k.map(k, " + body + ").flatten()"
}

// when is cond ? [rec] : [].
func when(cond, rec string) string { return "(" + cond + " ? [" + rec + "] : [])" }
