package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompareEveryFixtureAgrees(t *testing.T) {
	args := []string{"compare", "--namespace", "shop", "-o", "json", fixtures + "manifests",
		fixtures + "more/init-privileged.json", fixtures + "more/lookalike-hub.json", fixtures + "more/short-name.json",
		fixtures + "more/statefulset-root.json", fixtures + "more/hostpath-root.json", fixtures + "more/list.json", fixtures + "more/multi-doc.yaml"}
	out, stderr, code := run(t, args...)
	require.Equal(t, ExitOK, code, stderr+out)
	var doc struct {
		Agree bool `json:"agree"`
		Rows  []struct {
			Name    string `json:"name"`
			Results []struct {
				Engine  string `json:"engine"`
				Verdict string `json:"verdict"`
				Mutated bool   `json:"mutated"`
			} `json:"results"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.True(t, doc.Agree)
	require.Len(t, doc.Rows, 20)
	verdicts := map[string]string{}
	for _, r := range doc.Rows {
		require.Len(t, r.Results, 2+len(extraEngines))
		assert.Equal(t, "admitc", r.Results[0].Engine)
		assert.Equal(t, "kubernetes", r.Results[1].Engine)
		verdicts[r.Name] = r.Results[1].Verdict
	}
	assert.Equal(t, "denied", verdicts["lookalike-registry"])
	assert.Equal(t, "warned", verdicts["no-limit"])
	assert.Equal(t, "allowed", verdicts["good"])
}

func TestCompareShowsAPlantedDisagreement(t *testing.T) {
	out, _, code := run(t, "compare", "--policies", fixtures+"compare/no-privileged.yaml",
		"--upstream-policies", fixtures+"compare/handwritten-vap.yaml", fixtures+"manifests/good.json", fixtures+"manifests/privileged.json")
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, out, "Pod/good        kubernetes  denied   false    pods \"good\" is forbidden: ValidatingAdmissionPolicy 'handwritten-no-privileged' with binding 'han...\n")
	// The naive expression errors on a pod without a securityContext...
	assert.Contains(t, out, "DISAGREE Pod/good: admitc says allowed, kubernetes says denied\n")
	// ...and on a privileged pod both deny, but not for the same reason.
	assert.Contains(t, out, "DISAGREE Pod/privileged: kubernetes denies with")
	assert.Contains(t, out, "2 manifest(s): 2 with disagreements\n")

	md, _, code := run(t, "compare", "-o", "markdown", "--policies", fixtures+"compare/no-privileged.yaml",
		"--upstream-policies", fixtures+"compare/handwritten-vap.yaml", fixtures+"manifests/good.json")
	assert.Equal(t, ExitFailed, code)
	assert.Contains(t, md, "| manifest | engine | verdict | mutated | message |\n|---|---|---|---|---|\n| `Pod/good` | admitc | allowed | false | - |\n")
	assert.Contains(t, md, "- **disagreement** on `Pod/good`: admitc says allowed, kubernetes says denied\n")
}

func TestCompareBadInput(t *testing.T) {
	_, stderr, code := run(t, "compare", "-o", "yaml", fixtures+"manifests/good.json")
	assert.Equal(t, ExitUsage, code)
	assert.Equal(t, "error: --output must be table, json or markdown, got \"yaml\"\n", stderr)
	_, stderr, code = run(t, "compare", "--upstream-policies", fixtures+"manifests/good.json", fixtures+"manifests/good.json")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "Pod is not an admission policy object")
}
