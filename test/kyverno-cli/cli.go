package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// cliRow is one row of `kyverno test -o json --detailed-results`: the
// outcome of one expected result for one resource and rule.
type cliRow struct {
	Policy   string `json:"POLICY"`
	Rule     string `json:"RULE"`
	Resource string `json:"RESOURCE"`
	Result   string `json:"RESULT"`
	Reason   string `json:"REASON"`
	Message  string `json:"Message"`
}

// cliRun is what `kyverno test DIR` printed: its rows and its summary.
type cliRun struct {
	Rows           []cliRow
	Passed, Failed int
	// Summarised says the "Test Summary" line was printed; without it the
	// CLI stopped before judging (a load or policy error).
	Summarised bool
}

var (
	ansi    = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	summary = regexp.MustCompile(`^Test Summary: (\d+) tests passed and (\d+) tests failed$`)
)

// parseCLI reads the CLI's output: text lines ("Loading test ...") with one
// indented JSON array per test file between them, and the summary line.
func parseCLI(out []byte) (cliRun, error) {
	var run cliRun
	var array []string
	sc := bufio.NewScanner(bytes.NewReader(ansi.ReplaceAll(out, nil)))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case array != nil:
			array = append(array, line)
			if line == "]" {
				if err := run.addRows(array); err != nil {
					return run, err
				}
				array = nil
			}
		case line == "[":
			array = []string{line}
		case line == "[]":
		default:
			if m := summary.FindStringSubmatch(line); m != nil {
				fmt.Sscan(m[1], &run.Passed)
				fmt.Sscan(m[2], &run.Failed)
				run.Summarised = true
			}
		}
	}
	if array != nil {
		return run, fmt.Errorf("unterminated JSON array in the CLI's output")
	}
	return run, sc.Err()
}

func (r *cliRun) addRows(lines []string) error {
	var rows []cliRow
	if err := json.Unmarshal([]byte(strings.Join(lines, "\n")), &rows); err != nil {
		return fmt.Errorf("the CLI's JSON rows: %w", err)
	}
	for _, row := range rows {
		for _, f := range []*string{&row.Policy, &row.Rule, &row.Resource, &row.Result, &row.Reason, &row.Message} {
			*f = ansi.ReplaceAllString(*f, "")
		}
		r.Rows = append(r.Rows, row)
	}
	return nil
}

// failed reports whether the row is a failed expectation.
func (r cliRow) failed() bool { return r.Result != "Pass" }

// key is the row's policy and resource, as the comparison groups them.
func (r cliRow) key() resultKey {
	return resultKey{Policy: lastPart(r.Policy), Resource: cliResource(r.Resource)}
}

// cliResource turns the CLI's "apiVersion/Kind/namespace/name" (namespace
// empty for a cluster-scoped resource) into admitc's "Kind/namespace/name"
// or "Kind/name".
func cliResource(s string) string {
	parts := strings.Split(s, "/")
	if len(parts) < 3 {
		return s
	}
	kind, ns, name := parts[len(parts)-3], parts[len(parts)-2], parts[len(parts)-1]
	if ns == "" {
		return kind + "/" + name
	}
	return kind + "/" + ns + "/" + name
}

func lastPart(s string) string { return s[strings.LastIndex(s, "/")+1:] }
