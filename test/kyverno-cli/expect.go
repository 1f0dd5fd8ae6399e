package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

// What a directory is expected to do under the Kyverno CLI.
const (
	expectPass = "pass"
	// expectFail marks a fixture that plants wrong expectations on purpose.
	expectFail = "fail"
	// expectSkip marks a fixture the CLI cannot run offline.
	expectSkip = "skip"
	// expectKnown marks one rule's result on one resource that the CLI
	// cannot judge as admission would (its request has no name, say): the
	// CLI's rows for it neither fail the directory nor enter the comparison.
	expectKnown = "known"
	// expectEmpty marks a fixture on which the CLI must judge no result
	// and pass (a test without resources): admitc lists what the CLI
	// leaves out.
	expectEmpty = "empty"
)

// expectation is what the expectations file says of one directory.
type expectation struct {
	Verdict, Reason string
	Known           []knownResult
}

// knownResult is a "DIR known POLICY RULE RESOURCE REASON" line: RESOURCE
// is Kind/namespace/name or Kind/name.
type knownResult struct {
	Policy, Rule, Resource, Reason string
}

// known returns the line that excuses a CLI row, if any.
func (e expectation) known(r cliRow) *knownResult {
	for i, k := range e.Known {
		if k.Policy == lastPart(r.Policy) && k.Rule == r.Rule && k.Resource == cliResource(r.Resource) {
			return &e.Known[i]
		}
	}
	return nil
}

type expectations map[string]expectation

// readExpectations reads "DIR fail|skip|empty REASON" and "DIR known POLICY RULE
// RESOURCE REASON" lines; '#' starts a comment. A directory not listed is
// expected to pass.
func readExpectations(file string) (expectations, error) {
	out := expectations{}
	if file == "" {
		return out, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		dir := strings.TrimSuffix(fields[0], "/")
		e := out[dir]
		switch {
		case len(fields) >= 6 && fields[1] == expectKnown:
			e.Known = append(e.Known, knownResult{Policy: fields[2], Rule: fields[3], Resource: fields[4], Reason: strings.Join(fields[5:], " ")})
		case len(fields) >= 3 && (fields[1] == expectFail || fields[1] == expectSkip || fields[1] == expectEmpty) && e.Verdict == "":
			e.Verdict, e.Reason = fields[1], strings.Join(fields[2:], " ")
		default:
			return nil, fmt.Errorf("%s:%d: want DIR fail|skip|empty REASON (once per DIR) or DIR known POLICY RULE RESOURCE REASON, got %q", file, n, line)
		}
		out[dir] = e
	}
	return out, sc.Err()
}

// allUsed fails on a listed directory that is not among dirs: a stale line
// would hide nothing, but it would mislead the reader.
func (e expectations) allUsed(dirs []string) error {
	seen := map[string]bool{}
	for _, d := range dirs {
		seen[d] = true
	}
	var stale []string
	for d := range e {
		if !seen[d] {
			stale = append(stale, d)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		return fmt.Errorf("the expectations file lists directories that are not fixtures: %s", strings.Join(stale, ", "))
	}
	return nil
}

func (e expectation) verdict() string {
	if e.Verdict == "" {
		return expectPass
	}
	return e.Verdict
}
