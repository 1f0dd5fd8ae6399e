package verify

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Passed reports whether every expected result passed: none failed, is
// unsupported or an error; in a strict run, none is a warning or without
// a response either.
func (r *Report) Passed() bool {
	s := r.Summary
	return s.Failed == 0 && s.Unsupported == 0 && s.Errors == 0 && !(r.Strict && s.Warnings+s.NoResponse > 0)
}

// String renders the summary as one line; warnings and results without a
// response are counted only when there are some.
func (s Summary) String() string {
	out := fmt.Sprintf("%d expected result(s): %d passed, %d failed, %d unsupported, %d error(s)",
		s.Passed+s.Failed+s.Unsupported+s.Errors+s.Warnings+s.NoResponse, s.Passed, s.Failed, s.Unsupported, s.Errors)
	if s.Warnings > 0 {
		out += fmt.Sprintf(", %d warning(s)", s.Warnings)
	}
	if s.NoResponse > 0 {
		out += fmt.Sprintf(", %d without response", s.NoResponse)
	}
	return out
}

// verdict is a result's last column: PASS, FAIL, UNSUPPORTED, ERROR, WARN
// or NO-RESPONSE.
func (r Result) verdict() string {
	switch r.Outcome {
	case Passed:
		return "PASS"
	case Failed:
		return "FAIL"
	case Warning:
		return "WARN"
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
	_, err := fmt.Fprintln(w, r.summaryLine())
	return err
}

// summaryLine is the summary, saying what a strict run made of warnings
// and results without a response.
func (r *Report) summaryLine() string {
	line := r.Summary.String()
	if r.Summary.Warnings+r.Summary.NoResponse == 0 {
		return line
	}
	if r.Strict {
		return line + " (--strict: they fail the run)"
	}
	return line + " (they pass, as the test's own tool passes them; --strict fails them)"
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes a table for a pull-request comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "**admitc verify**: %s\n\n", r.summaryLine())
	fmt.Fprintln(w, "| file | test | case | expected | got | result |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", cell(res.File), cell(res.Test), cell(res.Case), cell(res.Expected), cell(res.got()), res.verdict())
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- note: %s\n", oneLine(n))
		}
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
	out := junitSuites{Tests: len(r.Results)}
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
		r.junitVerdict(res, &c, s)
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, s := range out.Suites {
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
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

// junitVerdict marks a failed result as a failure, an error as an error,
// an unsupported one as skipped; a warning or a result without a response
// is a failure in a strict run and skipped otherwise.
func (r *Report) junitVerdict(res Result, c *junitCase, s *junitSuite) {
	switch {
	case res.Outcome == Failed:
		c.Failure = &junitMessage{Message: "got " + res.got()}
		s.Failures++
	case res.Outcome == Error:
		c.Error = &junitMessage{Message: res.got()}
		s.Errors++
	case res.Outcome == Unsupported:
		c.Skipped = &junitMessage{Message: "unsupported: " + res.got()}
		s.Skipped++
	case (res.Outcome == Warning || res.Outcome == NoResponse) && r.Strict:
		c.Failure = &junitMessage{Message: string(res.Outcome) + " (--strict): " + res.got()}
		s.Failures++
	case res.Outcome == Warning || res.Outcome == NoResponse:
		c.Skipped = &junitMessage{Message: string(res.Outcome) + ": " + res.got()}
		s.Skipped++
	}
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
