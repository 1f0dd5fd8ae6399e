//go:build !serveonly

package cli

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/admitc/admitc/internal/audit"
	"github.com/admitc/admitc/internal/audit/openreports"
	"github.com/admitc/admitc/internal/render"
)

// auditOutputs are the sinks of one audit and what they write once it is
// done. Nothing reaches stdout, --out or the cluster before the run has
// finished: JSON is spooled to a temporary file, JUnit spools its suites,
// the Reports are built in memory under their cap.
type auditOutputs struct {
	tally   *audit.Tally
	json    *audit.JSONWriter
	spool   *os.File
	junit   *audit.JUnitWriter
	reports *openreports.Builder
	set     *openreports.Set
}

// newOutputs makes the sinks -o, --out and --apply ask for.
func (o *AuditOptions) newOutputs(a *audit.Auditor) (*auditOutputs, error) {
	out := &auditOutputs{tally: audit.NewTally(a.Policies(), o.MaxFailures)}
	var err error
	switch o.Output {
	case "json":
		if out.spool, err = os.CreateTemp("", ".admitc-audit-*.json"); err != nil {
			return nil, err
		}
		out.json = audit.NewJSONWriter(out.spool, o.AsDeny)
	case "junit":
		if out.junit, err = audit.NewJUnitWriter(a.Policies(), ""); err != nil {
			return nil, err
		}
	}
	if o.wantsReports() {
		out.reports = openreports.NewBuilder(a.Policies(), openreports.Options{Name: o.ReportName, MaxBytes: o.ReportMaxBytes})
	}
	return out, nil
}

// sinks are the sinks results go to.
func (out *auditOutputs) sinks() audit.Sink {
	sinks := audit.Sinks{out.tally}
	if out.json != nil {
		sinks = append(sinks, out.json)
	}
	if out.junit != nil {
		sinks = append(sinks, out.junit)
	}
	if out.reports != nil {
		sinks = append(sinks, out.reports)
	}
	return sinks
}

// write writes -o to stdout and the Reports to --out.
func (out *auditOutputs) write(o *AuditOptions, cov *audit.Coverage) error {
	if out.reports != nil {
		set, err := out.reports.Reports()
		if err != nil {
			return err
		}
		out.set = set
	}
	if o.OutDir != "" {
		if err := writeReportFiles(o.OutDir, out.set); err != nil {
			return err
		}
	}
	switch o.Output {
	case "json":
		return out.copyJSON(o.Out, cov)
	case "junit":
		return out.junit.Close(o.Out, cov)
	case "openreports":
		data, err := render.YAML(out.set.Objects())
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	}
	return audit.WriteTable(o.Out, out.tally, cov, o.AsDeny)
}

// copyJSON ends the spooled JSON document and copies it to w.
func (out *auditOutputs) copyJSON(w io.Writer, cov *audit.Coverage) error {
	if err := out.json.Close(out.tally, cov); err != nil {
		return fmt.Errorf("write the JSON output: %w", err)
	}
	if _, err := out.spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, out.spool)
	return err
}

// discard removes what was spooled.
func (out *auditOutputs) discard() {
	if out.spool != nil {
		out.spool.Close()
		os.Remove(out.spool.Name())
	}
	if out.junit != nil {
		out.junit.Abort()
	}
}

// isTerminal says whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
