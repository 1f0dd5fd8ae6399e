// Package diag holds the diagnostics the compiler and the backends report:
// an origin in a policy file and a message, rendered file:line:col: path:
// message, sorted by position. It imports only the IR.
package diag

import (
	"fmt"
	"sort"
	"strings"

	"github.com/admitc/admitc/ir"
)

// MaxDiagnostics caps how many diagnostics one run reports.
const MaxDiagnostics = 50

// Diagnostic is one error found in a policy file.
type Diagnostic struct {
	Origin  ir.Origin
	Message string
	// SourceLine is the line of the file the error is on, shown with a caret
	// under Origin.Column; empty when not useful.
	SourceLine string
}

// String renders the diagnostic as file:line:col: path: message, followed by
// the source line and a caret when one is known.
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.Origin.File != "" {
		fmt.Fprintf(&b, "%s:%d:%d: ", d.Origin.File, d.Origin.Line, d.Origin.Column)
	}
	if d.Origin.Path != "" {
		b.WriteString(d.Origin.Path + ": ")
	}
	b.WriteString(cutMiddle(d.Message, maxMessageBytes))
	if d.SourceLine != "" && d.Origin.Column > 0 {
		line, col := window(strings.ReplaceAll(d.SourceLine, "\t", " "), d.Origin.Column-1)
		fmt.Fprintf(&b, "\n | %s\n | %s^", line, strings.Repeat(".", col))
	}
	return b.String()
}

// maxMessageBytes and maxSourceBytes bound what a diagnostic echoes, so an
// error in a huge one-line file does not print the file.
const (
	maxMessageBytes = 1000
	maxSourceBytes  = 120
)

// window cuts a long source line to about maxSourceBytes around col (0-based),
// marking each cut with "...", and returns the caret's column in the result.
func window(line string, col int) (string, int) {
	if len(line) <= maxSourceBytes {
		return line, col
	}
	start := max(0, col-maxSourceBytes/2)
	end := min(len(line), start+maxSourceBytes)
	start = max(0, min(start, end-maxSourceBytes))
	out, caret := line[start:end], col-start
	if start > 0 {
		out, caret = "..."+out, caret+3
	}
	if end < len(line) {
		out += "..."
	}
	return strings.ToValidUTF8(out, ""), caret
}

// cutMiddle shortens s to about n bytes, saying how much it left out.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n/2], "") + fmt.Sprintf(" ...(%d bytes cut)... ", len(s)-n) + strings.ToValidUTF8(s[len(s)-n/2:], "")
}

// Diagnostics is a list of diagnostics; it is an error when non-empty.
type Diagnostics []Diagnostic

// Error renders all diagnostics, one per line, sorted by position.
func (ds Diagnostics) Error() string {
	sorted := append(Diagnostics(nil), ds...)
	sorted.Sort()
	var parts []string
	for i, d := range sorted {
		if i == MaxDiagnostics {
			parts = append(parts, fmt.Sprintf("... and %d more errors", len(sorted)-MaxDiagnostics))
			break
		}
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "\n")
}

// Sort orders diagnostics by file, line, column, then message.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Origin, ds[j].Origin
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return ds[i].Message < ds[j].Message
	})
}
