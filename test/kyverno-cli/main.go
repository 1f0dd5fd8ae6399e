// Command kyverno-cli runs the Kyverno CLI (`kyverno test`) on admitc's
// Kyverno fixture directories, as an oracle for their expectations, and
// compares each directory's outcomes with `admitc verify -o json`'s. It is
// run by test/kyverno-cli/run.sh (make kyverno-cli), which builds both
// binaries first.
//
//	kyverno-cli -kyverno BIN -admitc BIN -expect expectations.txt DIR...
//
// A directory passes when the CLI judges every expected result as passing
// (or, for a directory the expectations file marks "fail", when it finds
// the failures it plants) and admitc's verdict agrees with the CLI's for
// every policy and resource admitc judges. Exit code 1 if any does not.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.kyverno, "kyverno", "", "the Kyverno CLI binary")
	flag.StringVar(&cfg.admitc, "admitc", "", "the admitc binary")
	flag.StringVar(&cfg.expect, "expect", "", "the expectations file (DIR fail|skip REASON per line)")
	flag.BoolVar(&cfg.verbose, "v", false, "print every CLI row of a failing or differing directory")
	flag.BoolVar(&cfg.all, "all", false, "the directories are every fixture: an expectation for any other directory is an error")
	flag.Parse()
	cfg.dirs = flag.Args()
	ok, err := run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kyverno-cli:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

type config struct {
	kyverno, admitc, expect string
	verbose, all            bool
	dirs                    []string
}

// run checks every directory and writes the report; ok is false when any
// directory did not end as expected.
func run(cfg config, w io.Writer) (bool, error) {
	if cfg.kyverno == "" || cfg.admitc == "" || len(cfg.dirs) == 0 {
		return false, fmt.Errorf("need -kyverno, -admitc and at least one directory")
	}
	exp, err := readExpectations(cfg.expect)
	if err != nil {
		return false, err
	}
	if cfg.all {
		if err := exp.allUsed(cfg.dirs); err != nil {
			return false, err
		}
	}
	var results []dirResult
	for _, dir := range cfg.dirs {
		results = append(results, checkDir(cfg, dir, exp[dir]))
	}
	return writeReport(w, results, cfg.verbose), nil
}
