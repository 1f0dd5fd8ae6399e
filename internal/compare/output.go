package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes a terminal table: one line per manifest and engine.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MANIFEST\tENGINE\tVERDICT\tMUTATED\tMESSAGE")
	for _, row := range rows {
		for _, r := range row.Results {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", row.Kind+"/"+row.Name, r.Engine, r.Verdict, r.Mutated, first(r.Messages, 100))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes strings.Builder
	for _, row := range rows {
		for _, d := range row.Differences {
			fmt.Fprintf(&notes, "DISAGREE %s/%s: %s\n", row.Kind, row.Name, d)
		}
		for _, e := range row.Expected {
			fmt.Fprintf(&notes, "expected difference %s/%s: %s\n", row.Kind, row.Name, e)
		}
	}
	_, err := io.WriteString(w, notes.String()+summary(rows)+"\n")
	return err
}

func first(msgs []string, max int) string {
	if len(msgs) == 0 {
		return "-"
	}
	m := msgs[0]
	if len(msgs) > 1 {
		m += fmt.Sprintf(" (+%d more)", len(msgs)-1)
	}
	if len(m) > max {
		m = m[:max-3] + "..."
	}
	return m
}

func summary(rows []Row) string {
	disagree := 0
	for _, r := range rows {
		if !r.Agree {
			disagree++
		}
	}
	if disagree == 0 {
		return fmt.Sprintf("%d manifest(s): every engine agrees", len(rows))
	}
	return fmt.Sprintf("%d manifest(s): %d with disagreements", len(rows), disagree)
}

// WriteMarkdown writes a table for a pull-request comment.
func WriteMarkdown(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| manifest | engine | verdict | mutated | message |\n|---|---|---|---|---|\n")
	for _, row := range rows {
		for _, r := range row.Results {
			fmt.Fprintf(&b, "| `%s/%s` | %s | %s | %v | %s |\n", row.Kind, row.Name, r.Engine, r.Verdict, r.Mutated, mdEscape(first(r.Messages, 200)))
		}
	}
	var notes strings.Builder
	for _, row := range rows {
		for _, d := range row.Differences {
			fmt.Fprintf(&notes, "- **disagreement** on `%s/%s`: %s\n", row.Kind, row.Name, mdEscape(d))
		}
		for _, e := range row.Expected {
			fmt.Fprintf(&notes, "- expected difference on `%s/%s`: %s\n", row.Kind, row.Name, mdEscape(e))
		}
	}
	if notes.Len() > 0 {
		b.WriteString("\n" + notes.String())
	}
	b.WriteString("\n" + summary(rows) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// WriteJSON writes the rows as JSON.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Rows  []Row `json:"rows"`
		Agree bool  `json:"agree"`
	}{rows, AllAgree(rows)})
}
