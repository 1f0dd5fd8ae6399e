// Command bench prints `go test -bench` output of BenchmarkDecision as one
// table: per policy set, each engine's time and allocations per decision
// and how many times slower than admitc's fast path it is.
//
//	go test -tags kyverno ./internal/compare -run '^$' -bench Decision -benchmem | go run ./test/bench
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line matches one benchmark result: set, engine, ns/op, B/op, allocs/op.
var line = regexp.MustCompile(`^BenchmarkDecision/([^/]+)/(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

type result struct {
	set, engine       string
	ns, bytes, allocs float64
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var results []result
	base := map[string]float64{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		r := result{set: m[1], engine: m[2]}
		r.ns, _ = strconv.ParseFloat(m[3], 64)
		r.bytes, _ = strconv.ParseFloat(m[4], 64)
		r.allocs, _ = strconv.ParseFloat(m[5], 64)
		if r.engine == "admitc-fast" {
			base[r.set] = r.ns
		}
		results = append(results, r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("no BenchmarkDecision results in the input")
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "set\tengine\tµs/decision\tKB/decision\tallocs/decision\t× admitc-fast\t")
	for _, r := range results {
		ratio := "-"
		if b := base[r.set]; b > 0 {
			ratio = fmt.Sprintf("%.1f×", r.ns/b)
		}
		fmt.Fprintf(w, "%s\t%s\t%.1f\t%.1f\t%.0f\t%s\t\n", r.set, r.engine, r.ns/1000, r.bytes/1024, r.allocs, ratio)
	}
	return w.Flush()
}
