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
