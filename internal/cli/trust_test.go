package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const trust = "testdata/trust/"

// Every document of a policy file counts: the second document's
// disallow-privileged must deny the privileged pod.
func TestPolicyFileWithSeveralDocuments(t *testing.T) {
	out, stderr, code := run(t, "test", "--policies", trust+"multi.yaml", fixtures+"manifests/privileged.json")
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Contains(t, out, "DENIED Pod default/privileged\n")
	assert.Contains(t, out, `deny [disallow-privileged] container "web" is privileged (spec.containers[0].securityContext.privileged)`)
}

// A one-line Pod policy judges Deployments by their pod template instead
// of denying every one of them with "no such key: containers".
func TestOneLineCELPolicyAndDeployments(t *testing.T) {
	out, stderr, code := run(t, "test", "--policies", trust+"no-latest.yaml", fixtures+"manifests/deployment-good.json", fixtures+"manifests/cronjob-tag-only.json")
	assert.Equal(t, ExitOK, code, stderr+out)
	assert.Equal(t, "ALLOWED Deployment default/deployment-good\nALLOWED CronJob default/cronjob-tag-only\n2 object(s): 2 allowed, 0 denied, 0 with warnings\n", out)
}

func TestPolicyThatCannotBeRewrittenIsNoted(t *testing.T) {
	_, stderr, code := run(t, "test", "--policies", trust+"pods-only.yaml", fixtures+"manifests/good.json")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, `testdata/trust/pods-only.yaml:2:3: note: policy "running-pods" covers Pods only: its expressions read object.status, which has no equivalent in a workload's pod template, so they cannot be rewritten for ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob; use object.spec and object.metadata (or variables.podSpec, variables.podMetadata, variables.allContainers), or name the kinds in match.kinds`+"\n", stderr)
}

func TestExplainSaysWhatEachPolicyDid(t *testing.T) {
	out, stderr, code := run(t, "test", "--explain", "--policies", fixtures+"policies/cel-policies.json", trust+"exempt.json", trust+"typo.yaml")
	assert.Equal(t, ExitOK, code, stderr)
	for _, want := range []string{
		"ALLOWED Pod default/exempt\n",
		"  explain cc-admission-no-privileged: passed\n",
		"  explain cc-admission-digest: skipped (a matchCondition is false)\n",
		"  explain cc-admission-memory-limit: violated\n",
		"ALLOWED Poddd default/typo\n",
		"  warning: no loaded policy matches Poddd (v1, resource poddds): nothing judged it; check the kind's spelling and the policies' match.kinds\n",
		"  explain cc-admission-no-privileged: not-matched (poddds (Poddd) is not one of the resources it matches: pods)\n",
	} {
		assert.Contains(t, out, want)
	}
}

func TestUnknownKindIsWarnedWithoutExplain(t *testing.T) {
	out, _, code := run(t, "test", trust+"typo.yaml")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, "ALLOWED Poddd default/typo\n"+
		"  warning: no loaded policy matches Poddd (v1, resource poddds): nothing judged it; check the kind's spelling and the policies' match.kinds\n"+
		"1 object(s): 1 allowed, 0 denied, 0 with warnings\n", out)
}

func TestRepeatedNamesShowTheirSource(t *testing.T) {
	out, _, _ := run(t, "test", fixtures+"manifests/good.json", trust+"again/good.json")
	assert.Contains(t, out, "ALLOWED Pod default/good\n")
	assert.Contains(t, out, "ALLOWED Pod default/good (testdata/trust/again/good.json; same name as ../../examples/manifests/good.json)\n")
}

func TestDirectoriesSkipFilesThatAreNotObjects(t *testing.T) {
	out, stderr, code := run(t, "test", trust+"kustomized")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "notice: skipped testdata/trust/kustomized/kustomization.yaml: a kustomize Kustomization, not an object the API server admits\n"+
		"notice: skipped testdata/trust/kustomized/values.yaml: not a Kubernetes object (no kind)\n", stderr)
	assert.Contains(t, out, "1 object(s): 1 allowed")

	_, stderr, code = run(t, "test", trust+"empty-dir")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "no Kubernetes objects in testdata/trust/empty-dir")

	// A file named on the command line is never skipped.
	_, stderr, code = run(t, "test", trust+"kustomized/values.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "values.yaml")
}

// compare's kubernetes column runs imported policies as emitted, with their
// parameter objects (ConfigMaps reach the plugins' typed informers).
func TestCompareImportedPoliciesWithParams(t *testing.T) {
	out, stderr, code := run(t, "compare", "-n", "shop", "--namespace-labels", fixtures+"admission/namespace-labels.yaml",
		"--params", fixtures+"admission/params.yaml", "--policies", fixtures+"admission/vap-and-binding.yaml",
		fixtures+"admission/deployment-5.yaml", fixtures+"admission/deployment-20.yaml", fixtures+"admission/deployment-canary.yaml")
	assert.Equal(t, ExitOK, code, stderr+out)
	assert.Contains(t, out, "3 manifest(s): every engine agrees")

	out, stderr, code = run(t, "compare", "-n", "shop", "--params", fixtures+"params/registries-k8s.json",
		"--policies", fixtures+"policies/params-policy.yaml", fixtures+"manifests/good.json", fixtures+"manifests/tag-only.json")
	assert.Equal(t, ExitOK, code, stderr+out)
	assert.Contains(t, out, "2 manifest(s): every engine agrees")
}
