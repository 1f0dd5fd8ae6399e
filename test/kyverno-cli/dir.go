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
	// Known are the CLI's rows the expectations file excuses, with the reason.
	Known          []string
	knownResources map[resultKey]bool
	// Problem says why the directory did not end as expected; empty if it did.
	Problem string
}

// withoutKnown is the CLI's run without the rows e excuses (recorded in
// res): its failures no longer count, and its exit code is judged by the
// failures left.
func (e expectation) withoutKnown(res *dirResult) cliRun {
	out := res.CLI
	out.Rows = nil
	for _, r := range res.CLI.Rows {
		k := e.known(r)
		if k == nil {
			out.Rows = append(out.Rows, r)
			continue
		}
		res.Known = append(res.Known, fmt.Sprintf("%s %s %s: kyverno %s (%s): %s", k.Policy, k.Rule, k.Resource, r.Result, oneLine(r.Message), k.Reason))
		if r.failed() {
			out.Failed--
		}
	}
	res.knownResources = map[resultKey]bool{}
	for _, k := range e.Known {
		res.knownResources[resultKey{Policy: k.Policy, Resource: k.Resource}] = true
	}
	return out
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
	judged := exp.withoutKnown(&res)
	if judged.Failed == 0 && cli.Failed > 0 {
		cliErr = nil // every failure is excused: the CLI's exit code says no more
	}
	if res.Problem = cliProblem(exp.verdict(), judged, cliErr, out); res.Problem != "" {
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
	cv := cliVerdicts(judged.Rows)
	for k := range res.knownResources {
		if _, ok := cv[k]; !ok {
			delete(av, k) // the CLI judged nothing else there
		}
	}
	res.Cmp = compare(cv, av)
	if len(res.Cmp.Differ) > 0 {
		res.Problem = fmt.Sprintf("%d verdict(s) differ between the CLI and admitc", len(res.Cmp.Differ))
	}
	return res
}

// cliProblem judges the CLI's run against the directory's expectation. A
// row is judged by its result: the CLI's summary and exit code count a
// policy it skips as invalid ("Skip", "Invalid Policy") as passed.
func cliProblem(expect string, cli cliRun, runErr error, out []byte) string {
	failed := 0
	for _, r := range cli.Rows {
		if r.failed() {
			failed++
		}
	}
	switch {
	case !cli.Summarised:
		return fmt.Sprintf("the CLI stopped before judging (%v): %s", runErr, lastLines(out, 3))
	case expect == expectEmpty && (len(cli.Rows) > 0 || runErr != nil):
		return fmt.Sprintf("the CLI judged %d result(s) (or failed: %v) on a fixture where it should judge none", len(cli.Rows), runErr)
	case expect == expectEmpty:
		return ""
	case len(cli.Rows) == 0:
		return "the CLI judged no result"
	case expect == expectPass && (failed > 0 || runErr != nil):
		return fmt.Sprintf("the CLI failed or skipped %d of %d result(s)", failed, len(cli.Rows))
	case expect == expectFail && failed == 0:
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
	fmt.Fprintln(tw, "DIRECTORY\tEXPECT\tCLI PASS\tCLI FAIL\tADMITC PASS\tADMITC FAIL\tADMITC OTHER\tKEYS\tAGREE\tUNSUPPORTED\tKNOWN\tSTATUS")
	var t dirResult
	dirs, skipped, bad, known := 0, 0, 0, 0
	for _, r := range results {
		status := "ok"
		switch {
		case r.Expect.verdict() == expectSkip:
			status = "skipped"
			skipped++
		case r.Problem != "":
			status = "PROBLEM"
			bad++
		}
		if r.Expect.verdict() != expectSkip {
			dirs++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Dir, r.Expect.verdict(), r.CLI.Passed, r.CLI.Failed,
			r.AdmitcPassed, r.AdmitcFailed, r.AdmitcOther, r.Cmp.Keys, r.Cmp.Agree, r.Cmp.Unsupported, len(r.Known), status)
		known += len(r.Known)
		t.CLI.Passed += r.CLI.Passed
		t.CLI.Failed += r.CLI.Failed
		t.AdmitcPassed += r.AdmitcPassed
		t.AdmitcFailed += r.AdmitcFailed
		t.AdmitcOther += r.AdmitcOther
		t.Cmp.Keys += r.Cmp.Keys
		t.Cmp.Agree += r.Cmp.Agree
		t.Cmp.Unsupported += r.Cmp.Unsupported
	}
	fmt.Fprintf(tw, "TOTAL (%d run, %d skipped)\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d problem(s)\n", dirs, skipped, t.CLI.Passed, t.CLI.Failed,
		t.AdmitcPassed, t.AdmitcFailed, t.AdmitcOther, t.Cmp.Keys, t.Cmp.Agree, t.Cmp.Unsupported, known, bad)
	tw.Flush()
	for _, r := range results {
		if r.Expect.verdict() == expectSkip {
			fmt.Fprintf(w, "\n%s: skipped: %s", r.Dir, r.Expect.Reason)
		}
		for _, k := range r.Known {
			fmt.Fprintf(w, "\n%s: known: %s", r.Dir, k)
		}
	}
	fmt.Fprintln(w)
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
