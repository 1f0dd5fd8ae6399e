package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"
)

// dirResult is one fixture directory's outcome under both tools.
type dirResult struct {
	Dir    string
	Expect expectation
	CLI    cliRun
	// AdmitcPassed and the others count admitc's results by outcome.
	AdmitcPassed, AdmitcFailed, AdmitcOther int
	Cmp                                     comparison
	// Problem says why the directory did not end as expected; empty if it did.
	Problem string
}

const toolTimeout = 3 * time.Minute

// checkDir runs both tools on dir and judges the directory.
func checkDir(cfg config, dir string, exp expectation) dirResult {
	res := dirResult{Dir: dir, Expect: exp}
	if exp.verdict() == expectSkip {
		return res
	}
	out, cliErr := runTool(cfg.kyverno, "test", dir, "--remove-color", "--detailed-results", "-o", "json")
	cli, err := parseCLI(out)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	res.CLI = cli
	if res.Problem = cliProblem(exp.verdict(), cli, cliErr, out); res.Problem != "" {
		return res
	}
	// admitc verify exits 1 when a result fails; the JSON says which.
	aout, _ := runTool(cfg.admitc, "verify", "-o", "json", dir)
	rep, err := decodeAdmitc(aout)
	if err != nil {
		res.Problem = err.Error() + ": " + firstLine(aout)
		return res
	}
	for _, r := range rep.Results {
		switch r.Outcome {
		case "passed":
			res.AdmitcPassed++
		case "failed":
			res.AdmitcFailed++
		default:
			res.AdmitcOther++
		}
	}
	av, err := admitcVerdicts(rep)
	if err != nil {
		res.Problem = err.Error()
		return res
	}
	res.Cmp = compare(cliVerdicts(cli.Rows), av)
	if len(res.Cmp.Differ) > 0 {
		res.Problem = fmt.Sprintf("%d verdict(s) differ between the CLI and admitc", len(res.Cmp.Differ))
	}
	return res
}

// cliProblem judges the CLI's run against the directory's expectation.
func cliProblem(expect string, cli cliRun, runErr error, out []byte) string {
	switch {
	case !cli.Summarised:
		return fmt.Sprintf("the CLI stopped before judging (%v): %s", runErr, lastLines(out, 3))
	case len(cli.Rows) == 0:
		return "the CLI judged no result"
	case expect == expectPass && (cli.Failed > 0 || runErr != nil):
		return fmt.Sprintf("the CLI failed %d of %d result(s)", cli.Failed, cli.Passed+cli.Failed)
	case expect == expectFail && cli.Failed == 0:
		return "the CLI passed every result of a fixture that plants failures"
	}
	return ""
}

// runTool runs bin and returns its standard output, with its standard
// error appended (after the output, so JSON on stdout stays whole).
func runTool(bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	err := cmd.Run()
	return append(out.Bytes(), errOut.Bytes()...), err
}

// writeReport writes one row per directory, the totals and the details of
// every problem; ok is true when no directory has a problem.
func writeReport(w io.Writer, results []dirResult, verbose bool) bool {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIRECTORY\tEXPECT\tCLI PASS\tCLI FAIL\tADMITC PASS\tADMITC FAIL\tADMITC OTHER\tKEYS\tAGREE\tUNSUPPORTED\tSTATUS")
	var t dirResult
	dirs, skipped, bad := 0, 0, 0
	for _, r := range results {
		status := "ok"
		switch {
		case r.Expect.verdict() == expectSkip:
			status = "skipped: " + r.Expect.Reason
			skipped++
		case r.Problem != "":
			status = "PROBLEM"
			bad++
		}
		if r.Expect.verdict() != expectSkip {
			dirs++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Dir, r.Expect.verdict(), r.CLI.Passed, r.CLI.Failed,
			r.AdmitcPassed, r.AdmitcFailed, r.AdmitcOther, r.Cmp.Keys, r.Cmp.Agree, r.Cmp.Unsupported, status)
		t.CLI.Passed += r.CLI.Passed
		t.CLI.Failed += r.CLI.Failed
		t.AdmitcPassed += r.AdmitcPassed
		t.AdmitcFailed += r.AdmitcFailed
		t.AdmitcOther += r.AdmitcOther
		t.Cmp.Keys += r.Cmp.Keys
		t.Cmp.Agree += r.Cmp.Agree
		t.Cmp.Unsupported += r.Cmp.Unsupported
	}
	fmt.Fprintf(tw, "TOTAL (%d run, %d skipped)\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d problem(s)\n", dirs, skipped, t.CLI.Passed, t.CLI.Failed,
		t.AdmitcPassed, t.AdmitcFailed, t.AdmitcOther, t.Cmp.Keys, t.Cmp.Agree, t.Cmp.Unsupported, bad)
	tw.Flush()
	for _, r := range results {
		if r.Problem != "" {
			writeProblem(w, r, verbose)
		}
	}
	return bad == 0
}

func writeProblem(w io.Writer, r dirResult, verbose bool) {
	fmt.Fprintf(w, "\n%s: %s\n", r.Dir, r.Problem)
	for _, d := range r.Cmp.Differ {
		fmt.Fprintf(w, "  differ: %s\n", d)
	}
	for _, row := range r.CLI.Rows {
		if verbose || row.failed() {
			fmt.Fprintf(w, "  kyverno %s: %s %s %s: %s %s\n", row.Result, row.Policy, row.Rule, row.Resource, row.Reason, oneLine(row.Message))
		}
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
