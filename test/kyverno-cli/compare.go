package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// admitcResult is one result of `admitc verify -o json` (internal/verify's
// Result as it is written).
type admitcResult struct {
	File    string `json:"file"`
	Test    string `json:"test"`
	Case    string `json:"case"`
	Outcome string `json:"outcome"`
	Got     string `json:"got"`
	Reason  string `json:"reason"`
}

type admitcReport struct {
	Results []admitcResult `json:"results"`
}

// resultKey groups the rows of both tools: a policy's name (without its
// namespace) and a resource as "Kind/namespace/name" or "Kind/name". Rows
// differ in number (the CLI has one per rule response, autogen rules
// included), so outcomes are compared per key.
type resultKey struct {
	Policy, Resource string
}

func (k resultKey) String() string { return k.Policy + " " + k.Resource }

// verdict is one tool's outcome for a key: "pass" when every row passed,
// "fail" when any failed; admitc also says "unsupported" or "error".
type verdict string

// comparison is the per-key agreement of the two tools on one directory.
type comparison struct {
	Keys, Agree int
	// Unsupported counts keys admitc did not judge.
	Unsupported int
	// Differ lists each key the tools judged differently, with both answers.
	Differ []string
}

// cliVerdicts folds the CLI's rows into one verdict per key.
func cliVerdicts(rows []cliRow) map[resultKey]verdict {
	out := map[resultKey]verdict{}
	for _, r := range rows {
		k := r.key()
		if r.failed() {
			out[k] = "fail"
		} else if _, ok := out[k]; !ok {
			out[k] = "pass"
		}
	}
	return out
}

// outcomes turns admitc's outcomes into verdicts; a warning passes, as in
// kyverno test (admitc verify --strict fails it).
var outcomes = map[string]verdict{"passed": "pass", "failed": "fail", "unsupported": "unsupported", "error": "error", "warning": "pass"}

// rowless says the CLI prints no row for an admitc result: one without
// response, or the warning on a resource name that names nothing (the CLI
// ignores the name).
func rowless(r admitcResult) bool {
	return r.Outcome == "no-response" || r.Outcome == "warning" && strings.HasPrefix(r.Reason, "resource ")
}

// admitcVerdicts folds admitc's results into one verdict per key; the worst
// outcome wins (error, then unsupported, then failed).
func admitcVerdicts(rep admitcReport) (map[resultKey]verdict, error) {
	policies := map[string][]string{}
	rank := map[verdict]int{"pass": 0, "fail": 1, "unsupported": 2, "error": 3}
	out := map[resultKey]verdict{}
	for _, r := range rep.Results {
		if policies[r.File] == nil {
			names, err := testPolicies(r.File)
			if err != nil {
				return nil, err
			}
			policies[r.File] = names
		}
		if rowless(r) {
			continue
		}
		v := outcomes[r.Outcome]
		k := resultKey{Policy: policyOf(r.Test, policies[r.File]), Resource: r.Case}
		if old, ok := out[k]; !ok || rank[v] > rank[old] {
			out[k] = v
		}
	}
	return out, nil
}

// testPolicies reads the policies the test file's results name ("ns/name"
// for a namespaced Policy).
func testPolicies(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var t struct {
		Results []struct{ Policy string } `json:"results"`
	}
	if err := yaml.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []string
	for _, r := range t.Results {
		out = append(out, r.Policy)
	}
	return out, nil
}

// policyOf finds the policy of a result's name in admitc's report: "policy",
// or "policy/rule" where the rule is the one that responded (autogen-NAME
// for a controller), the longest policy that fits; without its namespace, as
// the CLI's rows compare.
func policyOf(test string, policies []string) string {
	best := ""
	for _, p := range policies {
		if (test == p || strings.HasPrefix(test, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	return lastPart(best)
}

// compare sets the CLI's verdicts beside admitc's, key by key.
func compare(cli, admitc map[resultKey]verdict) comparison {
	keys := map[resultKey]bool{}
	for k := range cli {
		keys[k] = true
	}
	for k := range admitc {
		keys[k] = true
	}
	var c comparison
	for k := range keys {
		c.Keys++
		a, b := cli[k], admitc[k]
		switch {
		case b == "unsupported":
			c.Unsupported++
		case a == b:
			c.Agree++
		default:
			c.Differ = append(c.Differ, fmt.Sprintf("%s: kyverno %s, admitc %s", k, orNone(a), orNone(b)))
		}
	}
	sort.Strings(c.Differ)
	return c
}

func orNone(v verdict) verdict {
	if v == "" {
		return "(no result)"
	}
	return v
}

// decodeAdmitc reads the JSON report at the start of out (standard error
// follows it).
func decodeAdmitc(out []byte) (admitcReport, error) {
	var rep admitcReport
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&rep); err != nil {
		return rep, fmt.Errorf("admitc verify's JSON: %w", err)
	}
	return rep, nil
}
