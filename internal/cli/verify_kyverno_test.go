package cli

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verifyRow is one row of `admitc verify -o json`.
type verifyRow struct {
	Test, Case, Expected, Got, Outcome, Reason string
}

// verifyJSON runs verify -o json with args.
func verifyJSON(t *testing.T, args ...string) ([]verifyRow, map[string]int, string, int) {
	t.Helper()
	out, stderr, code := run(t, append([]string{"verify", "-o", "json"}, args...)...)
	var rep struct {
		Results []verifyRow    `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out+stderr)
	return rep.Results, rep.Summary, stderr, code
}

// A rule name and a resource name with a typo: kyverno test passes the
// first as excluded and ignores the second. admitc reports both as
// warnings, which pass unless --strict.
func TestVerifyKyvernoWarnsOnNamesThatDoNotExist(t *testing.T) {
	dir := verifyData + "kyverno-mistakes"
	out, _, code := run(t, "verify", dir)
	assert.Equal(t, ExitOK, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	assert.Equal(t, []string{dir + "/kyverno-test.yaml", "disallow-host-path/host-paths", "Pod/default/bad-pod", "fail",
		"policy", "disallow-host-path", "has", "no", "rule", "host-paths:", "kyverno", "test", "passes", "the", "result", "as", "excluded", "WARN"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{dir + "/kyverno-test.yaml", "disallow-host-path/host-path", "bad-pods", "fail",
		"resource", "bad-pods", "is", "not", "among", "the", "test's", "resources:", "kyverno", "test", "ignores", "the", "name", "WARN"}, strings.Fields(lines[2]))
	assert.Contains(t, lines[3], "Pod/default/bad-pod")
	assert.True(t, strings.HasSuffix(lines[3], "PASS"))
	assert.Equal(t, "4 expected result(s): 2 passed, 0 failed, 0 unsupported, 0 error(s), 2 warning(s) (they pass, as the test's own tool passes them; --strict fails them)", lines[5])

	out, _, code = run(t, "verify", "--strict", dir)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "2 warning(s) (--strict: they fail the run)\n")

	rows, summary, _, _ := verifyJSON(t, dir)
	assert.Equal(t, map[string]int{"passed": 2, "failed": 0, "unsupported": 0, "errors": 0, "warnings": 2, "noResponse": 0}, summary)
	assert.Equal(t, "warning", rows[0].Outcome)

	out, _, code = run(t, "verify", "--strict", "-o", "junit", dir)
	assert.Equal(t, ExitFailed, code)
	var doc struct {
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 2, doc.Failures, "a strict run reports warnings as failures")
	out, _, _ = run(t, "verify", "-o", "junit", dir)
	require.NoError(t, xml.Unmarshal([]byte(out), &doc))
	assert.Equal(t, []int{0, 2}, []int{doc.Failures, doc.Skipped})
}

// Results that nothing answers are listed (no-response) and counted,
// never dropped: an expected patched resource missing from its file (a
// row kyverno test drops) and a test without resources.
func TestVerifyKyvernoListsResultsWithoutResponse(t *testing.T) {
	dir := verifyData + "kyverno-no-response"
	rows, summary, stderr, code := verifyJSON(t, dir)
	assert.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, map[string]int{"passed": 1, "failed": 0, "unsupported": 0, "errors": 0, "warnings": 0, "noResponse": 2}, summary)
	require.Len(t, rows, 3)
	assert.Equal(t, verifyRow{Test: "add-labels/add-labels", Case: "Service/default/already", Expected: "skip", Outcome: "no-response",
		Reason: "patched.yaml has no Service/default/already, so kyverno test gives the result no row (counted neither passed nor failed); failOnMissingResources: true fails it"}, rows[1])
	assert.Equal(t, verifyRow{Test: "add-labels/add-labels", Case: "unlabelled", Expected: "pass", Outcome: "no-response",
		Reason: "no resource to judge: the test has no resources, so kyverno test gives the result no row (counted neither passed nor failed)"}, rows[2])

	out, _, code := run(t, "verify", "--strict", dir)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "NO-RESPONSE\n")
	assert.Contains(t, out, "3 expected result(s): 1 passed, 0 failed, 0 unsupported, 0 error(s), 2 without response (--strict: they fail the run)\n")
}

// In a directory, as kyverno test, only kyverno-test.yaml files run (or
// --file-name's); a renamed test is skipped with a note, and runs when
// named as a path.
func TestVerifyKyvernoRunsOnlyTestFilesOfItsName(t *testing.T) {
	dir := verifyData + "kyverno-renamed"
	out, stderr, code := run(t, "verify", dir)
	assert.Equal(t, ExitOK, code, out)
	assert.Contains(t, out, "2 expected result(s): 2 passed, 0 failed")
	assert.Equal(t, "note: skipped "+dir+"/kyverno-test-disabled.yaml: a Kyverno test not named kyverno-test.yaml, which kyverno test does not run (--file-name); name the file as a path to run it\n", stderr)

	out, _, code = run(t, "verify", dir+"/kyverno-test-disabled.yaml")
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "1 expected result(s): 0 passed, 1 failed")

	out, stderr, code = run(t, "verify", "--file-name", "kyverno-test-disabled.yaml", dir)
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "1 expected result(s): 0 passed, 1 failed")
	assert.Contains(t, stderr, "skipped "+dir+"/kyverno-test.yaml: a Kyverno test not named kyverno-test-disabled.yaml")

	_, stderr, code = run(t, "verify", "--file-name", "a/b.yaml", dir)
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --file-name must be a file name without a directory, got \"a/b.yaml\"\n", stderr)
}

// --test-case-selector keeps the results kyverno test's would keep, and
// narrows them to the resource it names.
func TestVerifyKyvernoTestCaseSelector(t *testing.T) {
	dir := fixtures + "kyverno/disallow-host-path"
	rows, summary, _, code := verifyJSON(t, "--test-case-selector", "policy=disallow-*,rule=host-path,resource=bad-pod", dir)
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, 1, summary["passed"])
	require.Len(t, rows, 1)
	assert.Equal(t, "Pod/default/bad-pod", rows[0].Case)

	rows, _, _, code = verifyJSON(t, "-t", "resource=good?-*", dir)
	assert.Equal(t, ExitOK, code)
	var cases []string
	for _, r := range rows {
		cases = append(cases, r.Case)
	}
	assert.Equal(t, []string{"Pod/default/good1-pod", "Pod/default/good2-pod", "Deployment/default/good1-deployment", "Deployment/default/good2-deployment",
		"CronJob/default/good1-cronjob", "CronJob/default/good2-cronjob"}, cases)

	rows, _, _, _ = verifyJSON(t, "-t", "rule=other", dir)
	assert.Empty(t, rows)

	for arg, want := range map[string]string{
		"policy":         `error: --test-case-selector: "policy" is not KEY=VALUE (keys: policy, rule, resource), e.g. policy=disallow-*,rule=host-path,resource=bad-pod`,
		"kind=Pod":       `error: --test-case-selector: unknown key "kind" in "kind=Pod" (keys: policy, rule, resource)`,
		"rule=a=b,x=y=z": `error: --test-case-selector: "rule=a=b" is not KEY=VALUE (keys: policy, rule, resource), e.g. policy=disallow-*,rule=host-path,resource=bad-pod`,
	} {
		_, stderr, code := run(t, "verify", "-t", arg, dir)
		assert.Equal(t, ExitUsage, code, arg)
		assert.Equal(t, want+"\n", stderr, arg)
	}
}
