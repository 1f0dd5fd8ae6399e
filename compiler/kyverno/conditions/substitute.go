package conditions

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
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
		if data, _ := json.Marshal(x); strings.Contains(string(data), "{{") {
			// A substituted element is dyn: so must the others be.
			for i := range out {
				out[i] = "dyn(" + out[i] + ")"
			}
		} else {
			out = dynUnlessAlike(out, x)
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
			return "", fmt.Errorf("{{ }} variables inside a map value are not translated; compare the map's fields one by one, or keep the rule under Kyverno")
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
	if outer, inner := nestedVariables(x, locs); len(inner) > 0 {
		return nestedText(outer, inner, s, fresh, whole)
	}
	var parts, vars, values []string
	last := 0
	for _, loc := range locs {
		start, end := loc[4], loc[5]
		q, shallow := trimVariable(x[start:end])
		if shallow {
			return "", fmt.Errorf("the shallow substitution {{- %s}} is not translated; %s", q, rewriteOrKeep)
		}
		if q == "@" {
			return "", fmt.Errorf("the {{@}} variable is not translated; %s", rewriteOrKeep)
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

// placeholderPrefix marks, in a text whose inner {{ }} variables are taken
// out, where each inner variable's text goes.
const placeholderPrefix = "__admitcvar"

var placeholderRegex = regexp.MustCompile(placeholderPrefix + `[0-9]+__`)

// nestedVariables finds Kyverno's nested variables: with each variable of
// x replaced by a placeholder, the text outer still holds a variable
// (Kyverno substitutes the inner ones, then looks again). inner maps
// each placeholder to its variable's query; it is empty when x has no
// nested variable.
func nestedVariables(x string, locs [][]int) (string, map[string]string) {
	var b strings.Builder
	inner := map[string]string{}
	last := 0
	for i, loc := range locs {
		start, end := loc[4], loc[5]
		b.WriteString(x[last:start])
		p := fmt.Sprintf("%s%d__", placeholderPrefix, i)
		inner[p] = x[start:end]
		b.WriteString(p)
		last = end
	}
	b.WriteString(x[last:])
	outer := b.String()
	for _, loc := range variableRegex.FindAllStringSubmatchIndex(outer, -1) {
		if placeholderRegex.MatchString(outer[loc[4]:loc[5]]) {
			return outer, inner
		}
	}
	return x, nil
}

// nestedText translates a text with nested variables: each inner
// variable's value, written as text (a string as is, anything else as
// JSON), is spliced where Kyverno splices it, in the outer variables'
// queries as keys (a quoted identifier such as "{{ element.name }}", or a
// bare one, which must then lex as an identifier) and in the text around
// them.
func nestedText(outer string, inner map[string]string, s Scope, fresh *int, whole bool) (string, error) {
	keys := make([]string, 0, len(inner))
	for k := range inner {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var binds, values []string
	texts := map[string]string{}
	for _, p := range keys {
		q, shallow := trimVariable(inner[p])
		if shallow || q == "@" {
			return "", fmt.Errorf("the variable %s is not translated; %s", inner[p], rewriteOrKeep)
		}
		c, err := Query(q, s, fresh)
		if err != nil {
			return "", err
		}
		v := "v" + fmt.Sprint(*fresh)
		*fresh++
		binds, values = append(binds, v), append(values, "dyn("+c+")")
		texts[p] = "(type(" + v + ") == string ? " + v + " : " + jsonText(v) + ")"
	}
	withText := func(t string) string {
		var parts []string
		last := 0
		for _, loc := range placeholderRegex.FindAllStringIndex(t, -1) {
			if loc[0] > last {
				parts = append(parts, quote(unescape(t[last:loc[0]])))
			}
			parts = append(parts, texts[t[loc[0]:loc[1]]])
			last = loc[1]
		}
		if last < len(t) || len(parts) == 0 {
			parts = append(parts, quote(unescape(t[last:])))
		}
		return "(" + strings.Join(parts, " + ") + ")"
	}
	locs := variableRegex.FindAllStringSubmatchIndex(outer, -1)
	var parts []string
	last := 0
	for _, loc := range locs {
		start, end := loc[4], loc[5]
		q, shallow := trimVariable(outer[start:end])
		if shallow || q == "@" {
			return "", fmt.Errorf("the variable %s is not translated; %s", asWritten(outer[start:end], inner), rewriteOrKeep)
		}
		c, err := queryWithKeys(q, s, fresh, texts, inner)
		if err != nil {
			return "", err
		}
		if whole && start == 0 && end == len(outer) {
			parts = []string{c}
			last = end
			break
		}
		if start > last {
			parts = append(parts, withText(outer[last:start]))
		}
		v := "v" + fmt.Sprint(*fresh)
		*fresh++
		parts = append(parts, bind(v, "dyn("+c+")", "type("+v+") == string ? "+v+" : "+jsonText(v)))
		last = end
	}
	if last < len(outer) {
		parts = append(parts, withText(outer[last:]))
	}
	out := parts[0]
	if len(parts) > 1 || !(whole && len(locs) == 1 && locs[0][4] == 0 && locs[0][5] == len(outer)) {
		out = "(" + strings.Join(parts, " + ") + ")"
	}
	if s.Capture {
		// An inner variable Kyverno cannot resolve makes the whole text
		// UnknownKey, as in text.
		out = "[" + strings.Join(binds, ", ") + "].exists(x, " + IsUnknownKey("x") + ") ? " + UnknownKey + " : dyn(" + out + ")"
	}
	for i := len(binds) - 1; i >= 0; i-- {
		out = "[" + values[i] + "].map(" + binds[i] + ", " + out + ")[0]"
	}
	return out, nil
}

// queryWithKeys translates the query q whose field names hold the
// placeholders of texts (CEL strings): such a field reads the key the
// text makes; a placeholder anywhere else is refused. written holds each
// placeholder's variable as the policy writes it, for refusals.
func queryWithKeys(q string, s Scope, fresh *int, texts, written map[string]string) (string, error) {
	bare, raw := map[string]bool{}, map[string]bool{}
	for _, loc := range placeholderRegex.FindAllStringIndex(q, -1) {
		p := q[loc[0]:loc[1]]
		bare[p] = !quotedAt(q, loc[0])
		raw[p] = insideQuotes(q, loc[0], '\'') && !quotedAt(q, loc[0]) && !insideQuotes(q, loc[0], '`')
	}
	s.keys, s.bareKeys, s.rawKeys, s.written = texts, bare, raw, written
	c, err := Query(q, s, fresh)
	if err != nil {
		return "", err
	}
	if placeholderRegex.MatchString(c) {
		return "", fmt.Errorf("JMESPath %q: a {{ }} variable inside another is translated only where it names a field (a.\"{{ x }}\") or stands in a raw string ('{{ x }}'); write the query without it, or keep the rule under Kyverno", asWritten(q, written))
	}
	return c, nil
}

// asWritten is text with each placeholder replaced by the inner variable
// it stands for, as written in the policy.
func asWritten(text string, written map[string]string) string {
	return placeholderRegex.ReplaceAllStringFunc(text, func(p string) string {
		if w, ok := written[p]; ok {
			return w
		}
		return p
	})
}

// quotedAt says whether position i of the JMESPath text q is inside a
// double-quoted identifier.
func quotedAt(q string, i int) bool { return insideQuotes(q, i, '"') }
