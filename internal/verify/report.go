package verify

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Passed reports whether every expected result passed.
func (r *Report) Passed() bool {
	return r.Summary.Failed == 0 && r.Summary.Unsupported == 0 && r.Summary.Errors == 0
}

// String renders the summary as one line.
func (s Summary) String() string {
	return fmt.Sprintf("%d expected result(s): %d passed, %d failed, %d unsupported, %d error(s)",
		s.Passed+s.Failed+s.Unsupported+s.Errors, s.Passed, s.Failed, s.Unsupported, s.Errors)
}

// verdict is a result's last column: PASS, FAIL, UNSUPPORTED or ERROR.
func (r Result) verdict() string {
	switch r.Outcome {
	case Passed:
		return "PASS"
	case Failed:
		return "FAIL"
	}
	return strings.ToUpper(string(r.Outcome))
}

// got is what happened, or why it could not be judged.
func (r Result) got() string {
	if r.Reason != "" {
		return r.Reason
	}
	return r.Got
}

// WriteTable writes one row per result and the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tTEST\tCASE\tEXPECTED\tGOT\tRESULT")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", res.File, dash(res.Test), dash(res.Case), dash(res.Expected), oneLine(dash(res.got())), res.verdict())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, r.Summary)
	return err
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes a table for a pull-request comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "**admitc verify**: %s\n\n", r.Summary)
	fmt.Fprintln(w, "| file | test | case | expected | got | result |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", cell(res.File), cell(res.Test), cell(res.Case), cell(res.Expected), cell(res.got()), res.verdict())
	}
	return nil
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes JUnit XML: a testsuite per file, a testcase per result;
// an unsupported result is skipped with its reason (and still fails the run).
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Tests: len(r.Results), Failures: r.Summary.Failed, Errors: r.Summary.Errors, Skipped: r.Summary.Unsupported}
	index := map[string]int{}
	for _, res := range r.Results {
		i, ok := index[res.File]
		if !ok {
			i = len(out.Suites)
			index[res.File] = i
			out.Suites = append(out.Suites, junitSuite{Name: res.File})
		}
		s := &out.Suites[i]
		c := junitCase{Name: strings.TrimSpace(res.Case + " " + res.Expected), ClassName: res.Test}
		switch res.Outcome {
		case Failed:
			c.Failure = &junitMessage{Message: "got " + res.got()}
			s.Failures++
		case Error:
			c.Error = &junitMessage{Message: res.got()}
			s.Errors++
		case Unsupported:
			c.Skipped = &junitMessage{Message: "unsupported: " + res.got()}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:197], "") + "..."
	}
	return s
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(oneLine(s), "|", `\|`), "\n", " ")
}
