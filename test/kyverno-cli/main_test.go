package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliOutput is `kyverno test DIR --remove-color --detailed-results -o json`
// for a directory with two test files, as v1.19.1 prints it (a colour code
// left in, as JSON writes it without --remove-color).
const cliOutput = `
Loading test  ( examples/kyverno/a/.kyverno-test/kyverno-test.yaml ) ...
  Loading values/variables ...
  Loading policies ...
  Loading resources ...
  Applying 1 policy to 2 resources with 0 exceptions ...
  Checking results ...

[
  {
    "ID": 1,
    "Message": "",
    "POLICY": "require-labels",
    "REASON": "Ok",
    "RESOURCE": "v1/Pod/default/good",
    "RESULT": "\u001b[1;32mPass\u001b[0m",
    "RULE": "check-team"
  },
  {
    "ID": 2,
    "Message": "Want fail, got pass",
    "POLICY": "team-a/require-labels",
    "REASON": "Want fail, got pass",
    "RESOURCE": "apps/v1/Deployment/team-a/web",
    "RESULT": "Fail",
    "RULE": "autogen-check-team"
  }
]

Loading test  ( examples/kyverno/b/kyverno-test.yaml ) ...
[
  {
    "ID": 1,
    "Message": "Excluded",
    "POLICY": "ns-policy",
    "REASON": "Excluded",
    "RESOURCE": "v1/Namespace//prod",
    "RESULT": "Pass",
    "RULE": "check"
  }
]


Test Summary: 2 tests passed and 1 tests failed

Error: 1 tests failed
`

func TestParseCLI(t *testing.T) {
	run, err := parseCLI([]byte(cliOutput))
	require.NoError(t, err)
	assert.True(t, run.Summarised)
	assert.Equal(t, 2, run.Passed)
	assert.Equal(t, 1, run.Failed)
	require.Len(t, run.Rows, 3)
	assert.False(t, run.Rows[0].failed(), "the colour code is stripped before the result is read")
	assert.True(t, run.Rows[1].failed())
	assert.Equal(t, resultKey{Policy: "require-labels", Resource: "Deployment/team-a/web"}, run.Rows[1].key())
	assert.Equal(t, resultKey{Policy: "ns-policy", Resource: "Namespace/prod"}, run.Rows[2].key())
	// A policy the CLI skips as invalid counts as passed in its summary and
	// exit code; its rows are no verdict, so they count as failures here.
	assert.True(t, cliRow{Result: "Skip", Reason: "Invalid Policy"}.failed())
	assert.Equal(t, map[resultKey]verdict{{Policy: "p", Resource: "Pod/default/x"}: "fail"},
		cliVerdicts([]cliRow{{Policy: "p", Resource: "v1/Pod/default/x", Result: "Pass"}, {Policy: "p", Resource: "v1/Pod/default/x", Result: "Skip"}}))
}

func TestParseCLIStoppedEarly(t *testing.T) {
	run, err := parseCLI([]byte("\nError loading tests: open x: no such file or directory\n"))
	require.NoError(t, err)
	assert.False(t, run.Summarised)
	assert.Equal(t, "the CLI stopped before judging (exit status 1): Error loading tests: open x: no such file or directory",
		cliProblem(expectPass, run, errors.New("exit status 1"), []byte("\nError loading tests: open x: no such file or directory\n")))

	_, err = parseCLI([]byte("[\n  {\n"))
	assert.EqualError(t, err, "unterminated JSON array in the CLI's output")
}

func TestCLIProblem(t *testing.T) {
	pass := cliRun{Rows: []cliRow{{Result: "Pass"}}, Passed: 1, Summarised: true}
	fail := cliRun{Rows: []cliRow{{Result: "Fail"}}, Failed: 1, Summarised: true}
	exit1 := errors.New("exit status 1")
	assert.Empty(t, cliProblem(expectPass, pass, nil, nil))
	assert.Equal(t, "the CLI failed or skipped 1 of 1 result(s)", cliProblem(expectPass, fail, exit1, nil))
	assert.Empty(t, cliProblem(expectFail, fail, exit1, nil))
	assert.Equal(t, "the CLI passed every result of a fixture that plants failures", cliProblem(expectFail, pass, nil, nil))
	assert.Equal(t, "the CLI judged no result", cliProblem(expectPass, cliRun{Summarised: true}, nil, nil))
	assert.Empty(t, cliProblem(expectEmpty, cliRun{Summarised: true}, nil, nil))
	assert.Equal(t, "the CLI judged 1 result(s) (or failed: <nil>) on a fixture where it should judge none", cliProblem(expectEmpty, pass, nil, nil))
	skipped := cliRun{Rows: []cliRow{{Result: "Pass"}, {Result: "Skip", Reason: "Invalid Policy"}}, Passed: 2, Summarised: true}
	assert.Equal(t, "the CLI failed or skipped 1 of 2 result(s)", cliProblem(expectPass, skipped, nil, nil), "exit code 0, but a policy was not run")
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kyverno-test.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`results:
- policy: team-a/require-labels
  rule: check-team
- policy: other
`), 0o644))
	run, err := parseCLI([]byte(cliOutput))
	require.NoError(t, err)
	admitc, err := admitcVerdicts(admitcReport{Results: []admitcResult{
		{File: file, Test: "team-a/require-labels/check-team", Case: "Pod/default/good", Outcome: "passed"},
		// The CLI failed this one; admitc passing it is a difference.
		// admitc names the rule that responded, an autogen one for a Deployment.
		{File: file, Test: "team-a/require-labels/autogen-check-team", Case: "Deployment/team-a/web", Outcome: "passed"},
		{File: file, Test: "other", Case: "Pod/default/x", Outcome: "unsupported"},
	}})
	require.NoError(t, err)
	c := compare(cliVerdicts(run.Rows), admitc)
	assert.Equal(t, 4, c.Keys)
	assert.Equal(t, 1, c.Agree)
	assert.Equal(t, 1, c.Unsupported)
	assert.Equal(t, []string{
		"ns-policy Namespace/prod: kyverno pass, admitc (no result)",
		"require-labels Deployment/team-a/web: kyverno fail, admitc pass",
	}, c.Differ)
}

func TestReadExpectations(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "expectations.txt")
	require.NoError(t, os.WriteFile(file, []byte("# comment\n\na/b/  fail  plants a wrong result\nc skip needs a cluster\n"+
		"d known pol rule Pod/default/x no request\n"), 0o644))
	exp, err := readExpectations(file)
	require.NoError(t, err)
	assert.Equal(t, expectations{
		"a/b": {Verdict: expectFail, Reason: "plants a wrong result"},
		"c":   {Verdict: expectSkip, Reason: "needs a cluster"},
		"d":   {Known: []knownResult{{Policy: "pol", Rule: "rule", Resource: "Pod/default/x", Reason: "no request"}}},
	}, exp)
	assert.Equal(t, expectPass, exp["d"].verdict())
	assert.EqualError(t, exp.allUsed([]string{"a/b", "d"}), "the expectations file lists directories that are not fixtures: c")
	assert.NotNil(t, exp["d"].known(cliRow{Policy: "pol", Rule: "rule", Resource: "v1/Pod/default/x"}))
	assert.Nil(t, exp["d"].known(cliRow{Policy: "pol", Rule: "other", Resource: "v1/Pod/default/x"}))

	require.NoError(t, os.WriteFile(file, []byte("a pass because\n"), 0o644))
	_, err = readExpectations(file)
	assert.EqualError(t, err, file+`:1: want DIR fail|skip|empty REASON (once per DIR) or DIR known POLICY RULE RESOURCE REASON, got "a pass because"`)
}

// A known row neither fails the directory nor enters the comparison; the
// rest of its resource's rows still do.
func TestWithoutKnown(t *testing.T) {
	exp := expectation{Known: []knownResult{{Policy: "p", Rule: "names", Resource: "Pod/default/app", Reason: "no request"}}}
	res := dirResult{CLI: cliRun{Summarised: true, Passed: 1, Failed: 2, Rows: []cliRow{
		{Policy: "p", Rule: "names", Resource: "v1/Pod/default/app", Result: "Fail", Message: "got error"},
		{Policy: "p", Rule: "order", Resource: "v1/Pod/default/app", Result: "Pass"},
		{Policy: "p", Rule: "order", Resource: "v1/Pod/default/good", Result: "Fail"},
	}}}
	judged := exp.withoutKnown(&res)
	assert.Equal(t, 1, judged.Failed)
	assert.Len(t, judged.Rows, 2)
	assert.Equal(t, []string{"p names Pod/default/app: kyverno Fail (got error): no request"}, res.Known)
	assert.Equal(t, "the CLI failed or skipped 1 of 2 result(s)", cliProblem(expectPass, judged, nil, nil))
}
