//go:build kyverno

package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompareThreeEnginesAgreeOnEveryFixture(t *testing.T) {
	args := []string{"compare", "--namespace", "shop", "-o", "json", fixtures + "manifests",
		fixtures + "more/init-privileged.json", fixtures + "more/lookalike-hub.json", fixtures + "more/short-name.json",
		fixtures + "more/statefulset-root.json", fixtures + "more/hostpath-root.json"}
	out, stderr, code := run(t, args...)
	var doc struct {
		Agree bool `json:"agree"`
		Rows  []struct {
			Name        string   `json:"name"`
			Differences []string `json:"differences"`
			Results     []struct {
				Engine  string `json:"engine"`
				Verdict string `json:"verdict"`
			} `json:"results"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), stderr)
	for _, r := range doc.Rows {
		require.Len(t, r.Results, 3)
		assert.Equal(t, "kyverno", r.Results[2].Engine)
		assert.Empty(t, r.Differences, r.Name)
	}
	assert.Equal(t, ExitOK, code, stderr)
}

func TestCompareShowsAPlantedKyvernoDisagreement(t *testing.T) {
	out, _, code := run(t, "compare", "--policies", fixtures+"compare/no-privileged.yaml",
		"--kyverno-policies", fixtures+"compare/handwritten-kyverno.yaml",
		fixtures+"manifests/privileged.json", fixtures+"more/init-privileged.json")
	assert.Equal(t, ExitFailed, code)
	// The hand-written policy forgets initContainers...
	assert.Contains(t, out, "Pod/init-privileged  kyverno     allowed  false    -\n")
	assert.Contains(t, out, "DISAGREE Pod/init-privileged: admitc says denied, kyverno says allowed\n")
	// ...while on the privileged pod only the pattern's static message differs.
	assert.Contains(t, out, "expected difference Pod/privileged: kyverno: a Kyverno pattern rule reports its static message")
	assert.Contains(t, out, "2 manifest(s): 1 with disagreements\n")
}

// TestKyvernoPatternMessage shows the cause of the one expected difference:
// the required-labels policy is a Kyverno pattern, whose message is static.
func TestKyvernoPatternMessage(t *testing.T) {
	out, _, code := run(t, "compare", "--namespace", "shop", fixtures+"manifests/missing-label.json")
	assert.Equal(t, ExitOK, code)
	assert.Contains(t, out, "Pod/missing-label  kyverno     denied   true     [require-team-label] validation error: missing required labels: team. rule require-team-label fai...\n")
	assert.Contains(t, out, "expected difference Pod/missing-label: kyverno: a Kyverno pattern rule reports its static message")
	assert.Contains(t, out, "1 manifest(s): every engine agrees\n")
}

// A rule whose {{ }} variable does not resolve (a container without
// requests, for require-qos-guaranteed-foreach's limits) is an error in
// every engine. The typed translation raises Kyverno's own substitution
// error, so admitc, the API server's plugins and Kyverno agree on the text
// too; where the exact dynamic form decides, the texts differ (the
// expected difference TestSubstitutionErrorsAreAnExpectedDifference shows).
func TestKyvernoSubstitutionErrorMessage(t *testing.T) {
	dir := "../../examples/kyverno-pattern/require-qos-guaranteed-foreach/"
	out, _, code := run(t, "compare", "-o", "json", "--policies", dir+"policy.yaml", "--kyverno-policies", dir+"policy.yaml", dir+".kyverno-test/resources.yaml")
	assert.Equal(t, ExitOK, code, out)
	var report struct {
		Rows []struct {
			Name        string
			Agree       bool
			Differences []string
			Results     []struct {
				Engine   string
				Messages []string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &report), out)
	// Kyverno substitutes the pattern's values in Go's map order: the
	// error names cpu's or memory's, and admitc the first in key order.
	kyvernoErr := func(r string) string {
		return `validation failure: variable substitution failed: failed to resolve element.resources.requests.` + r +
			` at path /resources/limits/` + r + `: JMESPath query failed: Unknown key "requests" in path`
	}
	found := false
	for _, row := range report.Rows {
		if row.Name != "no-resources-pod" {
			assert.True(t, row.Agree, "%s: %v", row.Name, row.Differences)
			continue
		}
		found = true
		for _, r := range row.Results {
			require.Len(t, r.Messages, 1, r.Engine)
			if r.Engine == "kyverno" {
				assert.True(t, strings.Contains(r.Messages[0], kyvernoErr("cpu")) || strings.Contains(r.Messages[0], kyvernoErr("memory")), r.Messages[0])
				continue
			}
			assert.Contains(t, r.Messages[0], kyvernoErr("cpu"), r.Engine)
		}
		if strings.Contains(row.Results[len(row.Results)-1].Messages[0], kyvernoErr("cpu")) {
			assert.True(t, row.Agree, "the same text: %v", row.Differences)
		}
	}
	assert.True(t, found, out)
}
