package audit

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/admitc/admitc/ir"
)

// WriteTable writes the audit as a table: per policy the objects passed,
// failed, errored and skipped, and how many the API server would deny,
// with the first failures and their messages under it; then what each
// resource's listing covered, and the totals.
func WriteTable(w io.Writer, t *Tally, cov *Coverage, asDeny bool) error {
	var b strings.Builder
	width := len("POLICY")
	for _, pt := range t.Policies {
		width = max(width, len(policyLabel(pt.Policy)))
	}
	fmt.Fprintf(&b, "%-*s %6s %6s %6s %6s %6s\n", width, "POLICY", "PASS", "FAIL", "ERROR", "SKIP", "DENIED")
	for _, pt := range t.Policies {
		if pt.Policy.NotAudited != "" {
			continue
		}
		fmt.Fprintf(&b, "%-*s %6d %6d %6d %6d %6d\n", width, policyLabel(pt.Policy), pt.Pass, pt.Fail, pt.Error, pt.Skip, pt.Deny)
		writeFailures(&b, pt)
	}
	for _, pt := range t.Policies {
		if pt.Policy.NotAudited != "" {
			fmt.Fprintf(&b, "not audited: %s: %s\n", pt.Policy.Title(), pt.Policy.NotAudited)
		}
	}
	writeCoverage(&b, cov)
	writeTotals(&b, t, cov, asDeny)
	_, err := io.WriteString(w, b.String())
	return err
}

// policyLabel is the policy's title, saying when it is judged as an UPDATE.
func policyLabel(p *Policy) string {
	if p.Operation == ir.Update {
		return p.Title() + " (as UPDATE)"
	}
	return p.Title()
}

// writeFailures lists a policy's first failures, and its skip reason when
// it skipped everything it selected.
func writeFailures(b *strings.Builder, pt *PolicyTally) {
	for _, f := range pt.Failures {
		fmt.Fprintf(b, "    %s %s%s: %s%s\n", f.Result.Status, f.Object, bindingSuffix(f.Result), oneLine(f.Result.Message), actionsSuffix(f.Result))
	}
	if more := pt.Fail + pt.Error - len(pt.Failures); more > 0 {
		fmt.Fprintf(b, "    ... and %d more\n", more)
	}
	if pt.Skip > 0 && pt.Pass+pt.Fail+pt.Error == 0 {
		fmt.Fprintf(b, "    skip: %s\n", pt.SkipReason)
	}
}

func bindingSuffix(r PolicyResult) string {
	if r.Binding == "" || r.Binding == r.Policy {
		return ""
	}
	return " (binding " + r.Binding + ")"
}

func actionsSuffix(r PolicyResult) string {
	if len(r.Actions) == 0 {
		return ""
	}
	parts := make([]string, len(r.Actions))
	for i, a := range r.Actions {
		parts[i] = string(a)
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// writeCoverage says, per resource, what was listed and judged, and why a
// resource was not listed in full.
func writeCoverage(b *strings.Builder, cov *Coverage) {
	for _, r := range cov.Resources {
		switch {
		case r.Err != nil:
			fmt.Fprintf(b, "%s: not listed in full (%d listed, %d judged): %v\n", r.Target, r.Listed, r.Judged, r.Err)
		case !r.Complete:
			fmt.Fprintf(b, "%s: %d listed, %d judged before the interruption\n", r.Target, r.Listed, r.Judged)
		default:
			fmt.Fprintf(b, "%s: %d object(s)\n", r.Target, r.Judged)
		}
	}
}

// writeTotals is the closing line.
func writeTotals(b *strings.Builder, t *Tally, cov *Coverage, asDeny bool) {
	judged := cov.Judged()
	denied := "would be denied"
	if asDeny {
		denied = "would be denied with every binding at [Deny]"
	}
	fmt.Fprintf(b, "%d object(s) judged in %s (%s/s), %d selected by a policy: %d failed, %d %s\n",
		judged, cov.Elapsed.Round(time.Millisecond), rate(judged, cov.Elapsed), t.Objects, t.Failed, t.Denied, denied)
	if cov.Interrupted {
		fmt.Fprintln(b, "interrupted: the counts cover the objects judged before it, in the order listed above")
	}
}

// rate is objects per second, whole.
func rate(n int, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(n)/d.Seconds())
}
