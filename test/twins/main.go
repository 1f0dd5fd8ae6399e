// Command twins measures admitc's translation of every Kyverno pattern
// fixture (examples/kyverno-pattern) against the fixture's hand-written CEL
// twin (examples/twins): per fixture and in total, the CEL size of the
// ValidatingAdmissionPolicies `admitc compile --backend vap` emits for each
// (internal/twins.CELSize), the decision time of admitc's runtime (fast
// path) over the fixture's resources, and the time to compile the original.
// Goals (issue 31): CEL size ≤ 2× the twins' in total and ≤ 4× for every
// fixture; decision time ≤ 1.5×.
//
//	go run ./test/twins                # make twins
//	go run ./test/twins -run 'seccomp' -sort name
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/admitc/admitc/internal/twins"
)

// Goals are issue 31's.
const (
	goalTotalSize   = 2.0
	goalFixtureSize = 4.0
	goalTime        = 1.5
)

type options struct {
	examples string
	run      string
	sortBy   string
	timing   twins.Timing
}

func main() {
	var o options
	flag.StringVar(&o.examples, "examples", "examples", "the repository's examples directory")
	flag.StringVar(&o.run, "run", "", "measure only the fixtures whose name matches this regular expression")
	flag.StringVar(&o.sortBy, "sort", "size", "row order: size (largest size ratio first), time (largest time ratio first) or name")
	flag.DurationVar(&o.timing.Round, "round", 10*time.Millisecond, "the least time each engine decides in one timing round")
	flag.IntVar(&o.timing.Rounds, "rounds", 31, "timing rounds per fixture (each engine's fastest round counts)")
	flag.Parse()
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "twins:", err)
		os.Exit(1)
	}
}

func run(o options, out, progress io.Writer) error {
	re, err := regexp.Compile(o.run)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	fixtures, err := twins.Fixtures(o.examples)
	if err != nil {
		return err
	}
	var ms []twins.Measurement
	for _, f := range fixtures {
		if !re.MatchString(f.Name) {
			continue
		}
		fmt.Fprintf(progress, "measuring %s\n", f.Name)
		m, err := twins.Measure(f, o.timing)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return fmt.Errorf("no fixture matches -run %q", o.run)
	}
	if err := order(ms, o.sortBy); err != nil {
		return err
	}
	return report(out, ms)
}

// order sorts the rows, ties by name.
func order(ms []twins.Measurement, by string) error {
	key := map[string]func(twins.Measurement) float64{
		"size": twins.Measurement.SizeRatio,
		"time": twins.Measurement.TimeRatio,
		"name": func(twins.Measurement) float64 { return 0 },
	}[by]
	if key == nil {
		return fmt.Errorf("-sort %q: want size, time or name", by)
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if a, b := key(ms[i]), key(ms[j]); a != b {
			return a > b
		}
		return ms[i].Fixture < ms[j].Fixture
	})
	return nil
}

// report prints one row per fixture, the totals and the goals.
func report(out io.Writer, ms []twins.Measurement) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "fixture\tcompile ms\tCEL translation\tCEL twin\tsize ×\tµs/decision translation\tµs/decision twin\ttime ×\tserved: translation\ttwin\t×\t")
	var total twins.Measurement
	over := 0
	for _, m := range ms {
		row(w, m.Fixture, m)
		total.CompileOriginal += m.CompileOriginal
		total.CELOriginal += m.CELOriginal
		total.CELTwin += m.CELTwin
		total.DecideOriginal += m.DecideOriginal
		total.DecideTwin += m.DecideTwin
		total.ServedOriginal += m.ServedOriginal
		total.ServedTwin += m.ServedTwin
		total.Resources += m.Resources
		if m.SizeRatio() > goalFixtureSize {
			over++
		}
	}
	row(w, fmt.Sprintf("total (%d fixtures)", len(ms)), total)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nµs/decision: the time to admit each of a fixture's resources once (CREATE, fast path), in the fastest of the timing rounds,\n"+
		"over their number; the total row admits every fixture's resources once. served: the same over the resources as the API\n"+
		"server hands them to admission (decoded into their type, defaulted, encoded again), as the webhook sees them.\n")
	fmt.Fprintf(out, "goal: CEL size total ≤ %.0f×: %.1f× %s\n", goalTotalSize, total.SizeRatio(), verdict(total.SizeRatio() <= goalTotalSize))
	fmt.Fprintf(out, "goal: no fixture over %.0f×: %d of %d over %s\n", goalFixtureSize, over, len(ms), verdict(over == 0))
	fmt.Fprintf(out, "goal: decision time ≤ %.1f×: %.1f× %s (served: %.1f× %s)\n", goalTime, total.TimeRatio(), verdict(total.TimeRatio() <= goalTime),
		total.ServedRatio(), verdict(total.ServedRatio() <= goalTime))
	return nil
}

func row(w io.Writer, name string, m twins.Measurement) {
	perDecision := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(m.Resources) }
	fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.1f×\t%.1f\t%.1f\t%.1f×\t%.1f\t%.1f\t%.1f×\t\n", name, m.CompileOriginal.Milliseconds(),
		m.CELOriginal, m.CELTwin, m.SizeRatio(), perDecision(m.DecideOriginal), perDecision(m.DecideTwin), m.TimeRatio(),
		perDecision(m.ServedOriginal), perDecision(m.ServedTwin), m.ServedRatio())
}

func verdict(ok bool) string {
	if ok {
		return "(met)"
	}
	return "(not met)"
}
