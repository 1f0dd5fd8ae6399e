package cli

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const verifyData = "testdata/verify/"

func TestVerifyExamplesPassEverything(t *testing.T) {
	out, stderr, code := run(t, "verify", fixtures+"gatekeeper/")
	require.Equal(t, ExitOK, code, out+stderr)
	assert.NotContains(t, out, "FAIL")
	assert.Contains(t, out, "0 failed, 0 unsupported, 0 error(s)\n")
	var rep struct {
		Results []struct {
			Got string `json:"got"`
		} `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	out, _, _ = run(t, "verify", "-o", "json", fixtures+"gatekeeper/")
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.GreaterOrEqual(t, rep.Summary["passed"], 60)
	for _, r := range rep.Results {
		// A violation that is an evaluation error would pass "violations: yes" for the wrong reason.
		assert.NotContains(t, r.Got, "resulted in error")
	}
}

func TestVerifyPlantedWrongAssertion(t *testing.T) {
	out, _, code := run(t, "verify", verifyData+"wrong")
	assert.Equal(t, ExitFailed, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5)
	assert.Equal(t, []string{"testdata/verify/wrong/suite.yaml", "host-namespaces", "host-pid", "violations:", "no,", "message:", `"host-pid"`, "1", "matching", "violation(s):", `"Sharing`, "the", "host", "namespace", "is", "not", "allowed:", `host-pid"`, "FAIL"}, strings.Fields(lines[2]))
	assert.Equal(t, "3 expected result(s): 2 passed, 1 failed, 0 unsupported, 0 error(s)", lines[4])
}

func TestVerifyJSON(t *testing.T) {
	out, _, code := run(t, "verify", "-o", "json", verifyData+"wrong", fixtures+"gatekeeper-rego")
	assert.Equal(t, ExitFailed, code)
	var rep struct {
		Results []struct {
			File, Test, Case, Expected, Got, Outcome, Reason string
		} `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, map[string]int{"passed": 2, "failed": 1, "unsupported": 2, "errors": 0, "warnings": 0, "noResponse": 0}, rep.Summary)
	require.Len(t, rep.Results, 5)
	assert.Equal(t, "failed", rep.Results[1].Outcome)
	assert.Equal(t, `violations: no, message: "host-pid"`, rep.Results[1].Expected)
	assert.Equal(t, "unsupported", rep.Results[3].Outcome)
	assert.Equal(t, "../../examples/gatekeeper-rego/block-node-port/template.yaml:13:5: spec.targets[0]: Rego is not translated: this template has Rego and no K8sNativeValidation code; admitc runs only Gatekeeper's CEL engine", rep.Results[3].Reason)
}

func TestVerifyJUnit(t *testing.T) {
	out, _, code := run(t, "verify", "-o", "junit", verifyData+"wrong")
	assert.Equal(t, ExitFailed, code)
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 3, doc.Tests)
	assert.Equal(t, 1, doc.Failures)
	require.Len(t, doc.Suites, 1)
	require.NotNil(t, doc.Suites[0].Cases[1].Failure)
	assert.Equal(t, `got 1 matching violation(s): "Sharing the host namespace is not allowed: host-pid"`, doc.Suites[0].Cases[1].Failure.Message)
}

func TestVerifyMarkdown(t *testing.T) {
	out, _, code := run(t, "verify", "-o", "markdown", verifyData+"wrong")
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "**admitc verify**: 3 expected result(s): 2 passed, 1 failed, 0 unsupported, 0 error(s)\n")
	assert.Contains(t, out, "| testdata/verify/wrong/suite.yaml | host-namespaces | host-pid | violations: no, message: \"host-pid\" | 1 matching violation(s): \"Sharing the host namespace is not allowed: host-pid\" | FAIL |\n")
}

func TestVerifyBadInput(t *testing.T) {
	cases := map[string]struct {
		args   []string
		stdout string
		stderr string
	}{
		"malformed suite": {args: []string{verifyData + "malformed"}, stdout: "malformed suite: yaml: unmarshal errors:"},
		"missing path":    {args: []string{verifyData + "nothing"}, stderr: "error: read test files: stat testdata/verify/nothing: no such file or directory\n"},
		"no suites":       {args: []string{"testdata/trust"}, stderr: "error: no test files under testdata/trust (gator suites: kind Suite, apiVersion test.gatekeeper.sh/v1alpha1; Kyverno tests: kind Test, apiVersion cli.kyverno.io/v1alpha1)\n"},
		"bad output":      {args: []string{"-o", "yaml", verifyData + "wrong"}, stderr: "error: --output must be table, json, junit or markdown, got \"yaml\"\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := run(t, append([]string{"verify"}, tc.args...)...)
			assert.Equal(t, ExitUsage, code)
			assert.Contains(t, out, tc.stdout)
			assert.Equal(t, tc.stderr, stderr)
		})
	}
}

func TestTestGatekeeperTemplateAndConstraint(t *testing.T) {
	dir := fixtures + "gatekeeper/privileged-containers/"
	out, stderr, code := run(t, "test", "--policies", dir+"template.yaml", "--policies", dir+"constraint.yaml",
		dir+"samples/privileged-pod.yaml", dir+"samples/privileged-deployment.yaml", dir+"samples/unprivileged-pod.yaml", dir+"samples/excluded-namespace.yaml")
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Equal(t, "DENIED Pod default/privileged\n"+
		"  deny [k8spspprivilegedcontainer (binding psp-privileged-container)] Privileged container is not allowed: app\n"+
		"DENIED Deployment default/web\n"+
		"  deny [k8spspprivilegedcontainer (binding psp-privileged-container)] Privileged container is not allowed: web\n"+
		"ALLOWED Pod default/unprivileged\n"+
		"ALLOWED Pod kube-system/system\n"+
		"4 object(s): 2 allowed, 2 denied, 0 with warnings\n", out)

	// A warn constraint admits with a warning.
	dir = fixtures + "gatekeeper/allowed-repos/"
	out, _, code = run(t, "test", "--policies", dir+"template.yaml", "--policies", dir+"constraint.yaml", dir+"samples/docker-hub.yaml")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "ALLOWED Pod default/nginx\n  warn [k8sallowedrepos (binding allowed-repos)] container <web> has an invalid image repo <nginx:1.25>")

	// A constraint without its template is bad input.
	_, stderr, code = run(t, "test", "--policies", dir+"constraint.yaml", dir+"samples/docker-hub.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `constraint.yaml:1:1: constraint "allowed-repos" is of kind K8sAllowedRepos, but no ConstraintTemplate in the policy files defines that kind`)
}

func TestVerifyKyvernoExamplesPassEverything(t *testing.T) {
	out, stderr, code := run(t, "verify", "-o", "json", fixtures+"kyverno/")
	require.Equal(t, ExitOK, code, out+stderr)
	var rep struct {
		Results []struct {
			Test, Case, Expected, Outcome string
		} `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.GreaterOrEqual(t, rep.Summary["passed"], 150)
	assert.Equal(t, 0, rep.Summary["failed"]+rep.Summary["unsupported"]+rep.Summary["errors"])
	kinds := map[string]map[string]bool{}
	for _, r := range rep.Results {
		kind := strings.Split(r.Case, "/")[0]
		if kinds[kind] == nil {
			kinds[kind] = map[string]bool{}
		}
		kinds[kind][r.Expected] = true
	}
	for _, k := range []string{"Pod", "Deployment", "CronJob"} {
		assert.True(t, kinds[k]["pass"] && kinds[k]["fail"], "%s: good and bad", k)
	}
	assert.True(t, kinds["Pod"]["skip"] && kinds["Deployment"]["error"])
}

// The pattern fixtures' expectations are Kyverno's own (kyverno test
// v1.19.1 passes them all): pass, fail and skip, for Pods and both autogen
// twins.
func TestVerifyKyvernoPatternExamplesPassEverything(t *testing.T) {
	out, stderr, code := run(t, "verify", "-o", "json", fixtures+"kyverno-pattern/")
	require.Equal(t, ExitOK, code, out+stderr)
	var rep struct {
		Results []struct {
			Test, Case, Expected, Outcome string
		} `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, map[string]int{"passed": 717, "failed": 0, "unsupported": 0, "errors": 0, "warnings": 0, "noResponse": 0}, rep.Summary)
	expected := map[string]bool{}
	for _, r := range rep.Results {
		expected[strings.Split(r.Case, "/")[0]+" "+r.Expected] = true
	}
	for _, k := range []string{"Pod", "Deployment", "CronJob"} {
		assert.True(t, expected[k+" pass"] && expected[k+" fail"] && expected[k+" skip"], "%s: pass, fail and skip", k)
	}
}

func TestVerifyKyvernoPlantedWrongExpectation(t *testing.T) {
	out, _, code := run(t, "verify", verifyData+"kyverno-wrong")
	assert.Equal(t, ExitFailed, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, []string{"testdata/verify/kyverno-wrong/kyverno-test.yaml", "disallow-host-path/autogen-host-path", "Deployment/default/bad-deployment", "pass",
		"fail:", "HostPath", "volumes", "are", "forbidden.", "The", "field", "spec.volumes[*].hostPath", "must", "be", "unset.", "FAIL"}, strings.Fields(lines[2]))
	assert.Equal(t, "2 expected result(s): 1 passed, 1 failed, 0 unsupported, 0 error(s)", lines[3])
}

func TestVerifyKyvernoUnsupported(t *testing.T) {
	out, _, code := run(t, "verify", "-o", "json", verifyData+"kyverno-unsupported")
	assert.Equal(t, ExitFailed, code)
	var rep struct {
		Results []struct {
			Test, Outcome, Reason string
		} `json:"results"`
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, map[string]int{"passed": 1, "failed": 0, "unsupported": 7, "errors": 0, "warnings": 0, "noResponse": 0}, rep.Summary)
	assert.Equal(t, "namespace-quota/check-quota", rep.Results[0].Test)
	assert.Equal(t, "testdata/verify/kyverno-unsupported/api-call/policy.yaml:14:7: context.apiCall: Kyverno loads this context entry from the API server (or a service) at admission; an admission policy cannot: keep this rule under Kyverno (admitc verify reads the entry from a Kyverno test's values, as kyverno test does offline)", rep.Results[0].Reason)
	assert.Equal(t, "passed", rep.Results[1].Outcome, "the other rule of the same policy still runs")
	assert.Contains(t, rep.Results[2].Reason, "kyverno test v1.19 does not load paramResources")
}

func TestCompileKeepGoing(t *testing.T) {
	_, stderr, code := run(t, "compile", "-p", verifyData+"kyverno-unsupported/api-call/policy.yaml", "-b", "vap")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `policy.yaml:14:7: spec.rules[0].context[0]: context.apiCall: `)
	out, stderr, code := run(t, "compile", "-p", verifyData+"kyverno-unsupported/api-call/policy.yaml", "-b", "vap", "--keep-going")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, `policy.yaml:14:7: skipped: ClusterPolicy "namespace-quota" rule "check-quota": context.apiCall: `)
	assert.Contains(t, stderr, `skipped: ClusterPolicy "namespace-quota" rule "autogen-cronjob-check-quota": context.apiCall`)
	assert.Contains(t, out, "name: namespace-quota.check-labels\n")
	assert.Contains(t, out, "name: namespace-quota.autogen-cronjob-check-labels\n")
	assert.NotContains(t, out, "check-quota")
}
