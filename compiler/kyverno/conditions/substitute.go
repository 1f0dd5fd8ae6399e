package conditions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// variableRegex is Kyverno's regex.RegexVariables: a {{ }} variable, not
// preceded by a backslash.
var variableRegex = regexp.MustCompile(`(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})`)

// Value translates a condition's key or value as Kyverno substitutes it:
// a string that is exactly one {{ }} variable becomes the variable's value
// (any type); a string with variables inside text becomes text, each
// variable written as a string or as JSON; other YAML values are
// literals, lists and maps translated element by element.
func Value(v any, s Scope, fresh *int) (string, error) {
	switch x := v.(type) {
	case string:
		return text(x, s, fresh, true)
	case []any:
		var out []string
		for _, e := range x {
			c, err := Value(e, s, fresh)
			if err != nil {
				return "", err
			}
			out = append(out, c)
		}
		list := "[" + strings.Join(out, ", ") + "]"
		if data, _ := json.Marshal(x); s.Capture && strings.Contains(string(data), "{{") {
			l := "l" + fmt.Sprint(*fresh)
			*fresh++
			return bind(l, "dyn("+list+")", l+".exists(x, "+IsUnknownKey("x")+") ? "+UnknownKey+" : "+l), nil
		}
		return list, nil
	case map[string]any:
		if data, _ := json.Marshal(x); strings.Contains(string(data), "{{") {
			return "", fmt.Errorf("{{ }} variables inside a map value are not translated")
		}
	}
	return literal(v)
}

// Message translates a validate.message or condition message into a CEL
// string expression: the static text when it has no variables.
func Message(m string, s Scope, fresh *int) (string, error) {
	c, err := text(m, s, fresh, false)
	if err != nil {
		return "", err
	}
	if !variableRegex.MatchString(m) {
		return c, nil
	}
	v := "m" + fmt.Sprint(*fresh)
	*fresh++
	return "string(" + bind(v, "dyn("+c+")", "type("+v+") == string ? "+v+" : "+raise("the message does not resolve to a string")) + ")", nil
}

// text translates a string with {{ }} variables; whole says a string that
// is one variable keeps the variable's type.
func text(x string, s Scope, fresh *int, whole bool) (string, error) {
	locs := variableRegex.FindAllStringSubmatchIndex(x, -1)
	if len(locs) == 0 {
		return quote(unescape(x)), nil
	}
	var parts, vars, values []string
	last := 0
	for _, loc := range locs {
		start, end := loc[4], loc[5]
		q, shallow := trimVariable(x[start:end])
		if shallow {
			return "", fmt.Errorf("the shallow substitution {{- %s}} is not translated", q)
		}
		if q == "@" {
			return "", fmt.Errorf("the {{@}} variable is not translated")
		}
		c, err := Query(q, s, fresh)
		if err != nil {
			return "", err
		}
		if whole && start == 0 && end == len(x) {
			return c, nil
		}
		if start > last {
			parts = append(parts, quote(unescape(x[last:start])))
		}
		v := "v" + fmt.Sprint(*fresh)
		*fresh++
		if s.Capture {
			vars, values = append(vars, v), append(values, "dyn("+c+")")
			parts = append(parts, "(type("+v+") == string ? "+v+" : "+jsonText(v)+")")
		} else {
			parts = append(parts, bind(v, "dyn("+c+")", "type("+v+") == string ? "+v+" : "+jsonText(v)))
		}
		last = end
	}
	if last < len(x) {
		parts = append(parts, quote(unescape(x[last:])))
	}
	out := "(" + strings.Join(parts, " + ") + ")"
	if len(vars) == 0 {
		return out, nil
	}
	// Under Capture, a variable Kyverno cannot resolve makes the whole
	// text UnknownKey.
	out = "[" + strings.Join(vars, ", ") + "].exists(x, " + IsUnknownKey("x") + ") ? " + UnknownKey + " : dyn" + out
	for i := len(vars) - 1; i >= 0; i-- {
		out = "[" + values[i] + "].map(" + vars[i] + ", " + out + ")[0]"
	}
	return out, nil
}

// trimVariable is replaceBracesAndTrimSpaces: the query inside {{ }}, and
// whether it is a shallow substitution ({{- }}).
func trimVariable(v string) (string, bool) {
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(v, "{{"), "}}"))
	if strings.HasPrefix(q, "-") {
		return strings.TrimSpace(q[1:]), true
	}
	return q, false
}

// unescape is Kyverno's last step: an escaped \{{ becomes {{.
func unescape(s string) string { return strings.ReplaceAll(s, `\{{`, "{{") }
