package celenv

import (
	"fmt"
	"strings"
)

// Quote renders s as a CEL single-quoted string literal: backslash and
// quote escaped, control characters as \xNN. Every generator of CEL text
// (the compiler's lowering, the Kyverno pattern translation) quotes with it.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
