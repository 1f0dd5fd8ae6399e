package pattern

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/celtype"
)

// A pattern value with {{ }} variables is substituted by Kyverno before it
// matches anything (SubstituteAll in validate_resource.go's
// substitutePatterns): every variable of the pattern is read first, and one
// that fails to resolve fails the rule whatever the resource. The
// substituted string is then a pattern like any other, operators, ranges,
// quantities and wildcards included, chosen by its text at admission.
//
// The translation reads each such value once, before the pattern, as a
// CEL variable, and matches a plain value exactly: a string that no
// operator, range, duration or quantity reading applies to (PlainValue),
// compared with wildcards as Kyverno's compareString does. A value that is
// not a string, or not plain, raises NotReadAtAdmission where the pattern
// compares it: Kyverno would read it as a pattern of its own type or with
// its operators, which this CEL does not.

// dynamicValue is a pattern value read at admission: name is the CEL
// variable bound to cel, the value's translation.
type dynamicValue struct {
	text, name, cel string
}

// NotReadAtAdmission is the error a translated pattern raises where a
// value substituted at admission is one Kyverno reads as more than a value
// to compare with.
const NotReadAtAdmission = "admitc does not read a pattern value substituted at admission that is a map or a list, or a string that holds an operator, a range, | or &, or white space at its ends"

// operatorRegex matches the texts Kyverno's validateStringPatterns reads
// as more than one value to compare with (Equal): with | or &
// (alternatives), white space at an end (trimmed; Go's unicode.IsSpace is
// \s, \v, U+0085 and \pZ), a first character that starts an operator, or
// a range (InRangeRegex, NotInRangeRegex). Such a value raises
// NotReadAtAdmission; any other is compared as Kyverno's validateString
// compares: as durations, else as quantities, else as text with wildcards.
const operatorRegex = `[|&]|^[\s\v\x{85}\pZ<>!]|[\s\v\x{85}\pZ]$` +
	`|^[-|+]?\d+(\.\d+)?[A-Za-z]*!?-[-|+]?\d+(\.\d+)?[A-Za-z]*$`

// quantityRegex holds every text ParseQuantity reads (sign, digits and
// dots, suffix letters, exponent: "Ki" and "." are zero), and the empty
// text, which it does not.
const quantityRegex = `^[+-]?[0-9.]*[eEinumkKMGTP]*[-+]?[0-9]*$`

// dynamicValue returns the CEL variable holding p's value when p is a
// string with {{ }} variables the translator reads at admission, else "".
func (t *translator) dynamicValue(p any, fp *field.Path) (string, error) {
	s, ok := p.(string)
	if !ok || !hasVariable(s) || t.resolve == nil {
		return "", nil
	}
	return t.value(s, fp)
}

// readValues reads every {{ }} value of the pattern p, in a fixed order,
// whether or not the walk compares it: Kyverno substitutes them all first
// (a negation anchor's value too).
func (t *translator) readValues(p any, fp *field.Path) error {
	return EachValue(p, fp, func(text, _ string, at *field.Path) error {
		_, err := t.value(text, at)
		return err
	})
}

// EachValue calls visit with each string of the pattern document p (at
// fp) that holds {{ }} variables, the key whose value it is (that of the
// list holding it, for an element) and its place, in the order the
// translation reads them: map keys sorted, list elements in order.
func EachValue(p any, fp *field.Path, visit func(text, key string, at *field.Path) error) error {
	return eachValue(p, "", fp, "", func(text, key string, at *field.Path, _ string) error { return visit(text, key, at) })
}

// EachValueAt is EachValue giving each value's place as the JSON pointer
// Kyverno's substitution names in its errors (a / in a key escaped \/):
// /resources/limits/cpu.
func EachValueAt(p any, visit func(text, key, pointer string) error) error {
	return eachValue(p, "", field.NewPath("pattern"), "", func(text, key string, _ *field.Path, pointer string) error {
		return visit(text, key, pointer)
	})
}

// HasValues says the pattern document p has a value EachValue visits.
func HasValues(p any) bool {
	found := false
	_ = EachValue(p, field.NewPath("pattern"), func(string, string, *field.Path) error {
		found = true
		return nil
	})
	return found
}

func eachValue(p any, key string, fp *field.Path, pointer string, visit func(text, key string, at *field.Path, pointer string) error) error {
	switch pt := p.(type) {
	case map[string]any:
		keys := make([]string, 0, len(pt))
		for k := range pt {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := eachValue(pt[k], k, fp.Child(k), pointer+"/"+strings.ReplaceAll(k, "/", `\/`), visit); err != nil {
				return err
			}
		}
	case []any:
		for i, v := range pt {
			if err := eachValue(v, key, fp.Index(i), pointer+"/"+strconv.Itoa(i), visit); err != nil {
				return err
			}
		}
	case string:
		if hasVariable(pt) {
			return visit(pt, key, fp, pointer)
		}
	}
	return nil
}

// value is the CEL variable holding the substituted value of s.
func (t *translator) value(s string, fp *field.Path) (string, error) {
	for _, v := range t.values {
		if v.text == s {
			return v.name, nil
		}
	}
	c, err := t.resolve(s)
	if err != nil {
		return "", errorf(fp, "%s", err.Error())
	}
	name := celtype.EagerBindPrefix + strconv.Itoa(len(t.values))
	t.values = append(t.values, dynamicValue{text: s, name: name, cel: c})
	return name, nil
}

// bindValues evaluates the pattern's values read at admission, in order,
// before out, which reads them.
func (t *translator) bindValues(out string) string {
	for i := len(t.values) - 1; i >= 0; i-- {
		out = bind(t.values[i].name, "dyn("+t.values[i].cel+")", out)
	}
	return out
}

// unreadable is the CEL test that the value s substituted at admission is
// not one the translation compares with: not a string, or one with an
// operator (operatorRegex).
func unreadable(s string) string {
	return "(type(" + s + ") == string ? " + s + ".matches(" + quote(operatorRegex) + ") : " + s + " != null && type(" + s + ") != bool && type(" + s + ") != int && type(" + s + ") != uint && type(" + s + ") != double)"
}

// NotPlain is the CEL test that the string s substituted at admission is
// one Kyverno may read as more than text: an operator, a duration or a
// quantity (the typed translation compares with text only).
func NotPlain(s string) string {
	return s + ".matches(" + quote(operatorRegex) + ") || " + s + ".matches(" + quote(durationRegex) + ") || " + s + " != '' && " + s + ".matches(" + quote(quantityRegex) + ")"
}

// NotRead is the CEL expression that raises NotReadAtAdmission.
func NotRead() string { return "{}[" + quote(NotReadAtAdmission) + "]" }

// valuePredicate is Kyverno's pattern.Validate(v, s) for the value s
// substituted at admission (see unreadable). A boolean, a number (a
// float64 in Kyverno's JSON context: validateFloatPattern, a string value
// read as strconv.ParseFloat reads it) and null (validateNilPattern) are
// patterns of their own type. A string without an operator is
// validateString's Equal. As durations when s and the value (a string, 0,
// or null as "0") are Go durations; else as quantities when s and the
// value (a string, a number, or null as "0") are (a float compared as
// CEL writes it, where Kyverno writes it %f: the same quantity up to six
// decimals); else as compareString: a string, int or bool (written as
// Go's FormatInt and FormatBool write it) matches s with its wildcards; a
// float is written %E, which a wildcard could match (raised) and plain
// text does not (a text that is one is a quantity); null, maps and lists
// never match.
func valuePredicate(s string) predicate {
	return func(v string) string {
		isD, dv := durationValue(v)
		isQ, qv := quantityValue(v)
		text := "(type(" + v + ") == string || type(" + v + ") == int || type(" + v + ") == bool)"
		wild := "(" + s + ".contains('*') || " + s + ".contains('?'))"
		return "(" + s + " == null ? " + nilPredicate(v) +
			" : type(" + s + ") == bool ? type(" + v + ") == bool && " + v + " == " + s +
			" : " + celenv.IsNumber(s) + " ? " + numberPredicate("double("+s+")")(v) +
			" : " + s + ".matches(" + quote(durationRegex) + ") && " + isD + " ? duration(" + s + ") == " + dv +
			" : isQuantity(" + s + ") && " + isQ + " ? " + qv + ".compareTo(quantity(" + s + ")) == 0" +
			" : " + text + " ? " + DynamicWildcardMatch(s, "string("+v+")") +
			" : type(" + v + ") == double && " + wild + " ? " + NotRead() + " : false)"
	}
}

// DynamicWildcardMatch is wildcard.Match(p, s) for CEL strings p and s
// known only at admission: '*' any run of characters, '?' exactly one. The
// pattern becomes a regular expression quoted as RE2's \Q...\E literal
// text, closed around each wildcard; a \E in the pattern itself closes the
// quote, writes the backslash escaped and reopens it before the E.
func DynamicWildcardMatch(p, s string) string {
	re := quote(`(?s)^\Q`) + " + " + p + ".replace(" + quote(`\E`) + ", " + quote(`\E\\\QE`) + ").replace('*', " + quote(`\E.*\Q`) + ").replace('?', " + quote(`\E.\Q`) + ") + " + quote(`\E$`)
	return "((" + p + ".contains('*') || " + p + ".contains('?')) ? " + s + ".matches(" + re + ") : " + p + " == " + s + ")"
}
