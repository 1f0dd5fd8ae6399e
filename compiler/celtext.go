package compiler

import "strings"

// celSegments splits CEL source into code and string-literal segments, in
// order; odd indexes are literals (quotes and prefixes included). It knows
// CEL's quotes: '…', "…", ”'…”', """…""", r/R prefixes (raw) turn escapes off.
func celSegments(src string) []string {
	var out []string
	start, i := 0, 0
	for i < len(src) {
		c := src[i]
		if c != '\'' && c != '"' {
			i++
			continue
		}
		// A prefix (r, b, rb, br) stays with the code; only r changes escapes.
		raw := i > 0 && (src[i-1] == 'r' || src[i-1] == 'R') || i > 1 && (src[i-2] == 'r' || src[i-2] == 'R') && (src[i-1] == 'b' || src[i-1] == 'B')
		end := literalEnd(src, i, raw)
		out = append(out, src[start:i], src[i:end])
		start, i = end, end
	}
	return append(out, src[start:])
}

// literalEnd returns the index just past the literal whose quote is at i.
func literalEnd(src string, i int, raw bool) int {
	quote := src[i : i+1]
	if strings.HasPrefix(src[i:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	for j := i + len(quote); j < len(src); j++ {
		if src[j] == '\\' && !raw {
			j++
			continue
		}
		if strings.HasPrefix(src[j:], quote) {
			return j + len(quote)
		}
	}
	return len(src)
}

// mapCode applies f to the code of a CEL expression, leaving its string
// literals as they are.
func mapCode(src string, f func(string) string) string {
	if src == "" {
		return src
	}
	segs := celSegments(src)
	for i := 0; i < len(segs); i += 2 {
		segs[i] = f(segs[i])
	}
	return strings.Join(segs, "")
}

// blankLiterals returns the code of a CEL expression with every string
// literal replaced by an empty one, for searching it.
func blankLiterals(src string) string {
	segs := celSegments(src)
	for i := 1; i < len(segs); i += 2 {
		segs[i] = "''"
	}
	return strings.Join(segs, "")
}
