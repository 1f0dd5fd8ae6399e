package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

const noLatest = `policies:
- name: no-latest
  type: cel
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: "images must not use the latest tag"
`

func withImage(t *testing.T, path, image string) *runtime.Request {
	t.Helper()
	obj := manifest(t, path)
	specPath := map[string][]string{
		"Pod":        {"spec"},
		"Deployment": {"spec", "template", "spec"},
		"CronJob":    {"spec", "jobTemplate", "spec", "template", "spec"},
	}[obj.GetKind()]
	containers, found, err := unstructuredSlice(obj.Object, append(specPath, "containers")...)
	require.True(t, found)
	require.NoError(t, err)
	containers[0].(map[string]any)["image"] = image
	return runtime.RequestFor(obj, nil, "shop")
}

func unstructuredSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[p]
	}
	s, ok := cur.([]any)
	return s, ok, nil
}

// A one-line Pod policy must judge workloads by their pod template, not
// deny every Deployment with "no such key: containers".
func TestCELPolicyJudgesWorkloadsByTheirPodTemplate(t *testing.T) {
	e := engineFromYAML(t, noLatest)
	cases := map[string]struct {
		manifest, image string
		denials         []string
	}{
		"pod latest":        {"manifests/good.json", "nginx:latest", []string{"[no-latest] images must not use the latest tag"}},
		"pod tagged":        {"manifests/good.json", "nginx:1.30", nil},
		"deployment latest": {"manifests/deployment-good.json", "nginx:latest", []string{"[autogen-no-latest] images must not use the latest tag"}},
		"deployment tagged": {"manifests/deployment-good.json", "nginx:1.30", nil},
		"cronjob latest":    {"manifests/cronjob-tag-only.json", "nginx:latest", []string{"[autogen-cronjob-no-latest] images must not use the latest tag"}},
		"cronjob tagged":    {"manifests/cronjob-tag-only.json", "nginx:1.30", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := admit(t, e, withImage(t, tc.manifest, tc.image))
			assert.Equal(t, tc.denials, res.Denials())
		})
	}
}

func TestCELAutogenRewrite(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(`policies:
- name: team
  type: cel
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels && object.metadata.namespace != 'x' && 'object.spec' != ''"
`)}}, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, 3)
	assert.Equal(t, "has(object.metadata.labels) && 'team' in object.metadata.labels && object.metadata.namespace != 'x' && 'object.spec' != ''", set.Policies[0].Validations[0].Expression)
	assert.Equal(t, "autogen-team", set.Policies[1].Name)
	assert.Equal(t, "has(object.spec.template.metadata.labels) && 'team' in object.spec.template.metadata.labels && object.metadata.namespace != 'x' && 'object.spec' != ''", set.Policies[1].Validations[0].Expression)
	assert.Equal(t, "autogen-cronjob-team", set.Policies[2].Name)
	assert.Equal(t, "has(object.spec.jobTemplate.spec.template.metadata.labels) && 'team' in object.spec.jobTemplate.spec.template.metadata.labels && object.metadata.namespace != 'x' && 'object.spec' != ''", set.Policies[2].Validations[0].Expression)
	// A labels policy judges no containers: kubectl debug is not its business.
	for _, p := range set.Policies {
		for _, r := range p.Match.Resources {
			assert.Empty(t, r.Subresources, p.Name)
		}
	}
}

func TestCELPolicyThatCannotBeRewrittenCoversPodsOnly(t *testing.T) {
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(`policies:
- name: phase
  type: cel
  validations:
  - expression: "!has(object.status.phase) || object.spec.containers.size() > 0"
`)}}, compiler.Options{})
	require.Empty(t, diags)
	require.Len(t, set.Policies, 1, "the Pod policy only: no workload policy, and no kubectl debug twin for a policy that reads no ephemeral container")
	require.Len(t, set.Policies[0].Match.Resources, 1)
	assert.Equal(t, "pods", set.Policies[0].Match.Resources[0].Resource)
	assert.Equal(t, []string{"covers Pods only: its expressions read object.status, which has no equivalent in a workload's pod template, so they cannot be rewritten for ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob; " +
		"use object.spec and object.metadata (or variables.podSpec, variables.podMetadata, variables.allContainers), or name the kinds in match.kinds"}, set.Policies[0].Notes)
}

func TestCELDocumentedVariables(t *testing.T) {
	e := engineFromYAML(t, `policies:
- name: no-privileged
  type: cel
  validations:
  - expression: "variables.allContainers.all(c, !has(c.securityContext) || c.securityContext.?privileged.orValue(false) != true)"
    messageExpression: "'privileged containers in ' + string(variables.podMetadata.?labels.?app.orValue('?'))"
`)
	for _, m := range []string{"more/init-privileged.json", "manifests/deployment-privileged.json"} {
		res := admit(t, e, runtime.RequestFor(manifest(t, m), nil, "shop"))
		assert.False(t, res.Allowed(), m)
	}
	assert.True(t, admit(t, e, runtime.RequestFor(manifest(t, "manifests/deployment-good.json"), nil, "shop")).Allowed())
}

// On kubectl debug, a cel policy that judges containers judges only the new
// ephemeral containers; a policy that judges no container does not match
// the subresource at all.
func TestCELPolicyOnKubectlDebug(t *testing.T) {
	e := engineFromYAML(t, noLatest+`- name: needs-owner
  type: cel
  validations:
  - expression: "has(object.metadata.labels) && 'owner' in object.metadata.labels"
- name: no-privileged-debug
  type: cel
  validations:
  - expression: "object.spec.?ephemeralContainers.orValue([]).all(c, c.?securityContext.?privileged.orValue(false) != true)"
`)
	debug := func(old, obj string) *runtime.Request {
		req := runtime.RequestFor(manifest(t, obj), manifest(t, old), "shop")
		req.SubResource = "ephemeralcontainers"
		return req
	}
	// good.json has no owner label and a pinned image; the debug container is unprivileged.
	res := admit(t, e, debug("manifests/good.json", "more/debug-general.json"))
	assert.Empty(t, res.Denials())
	res = admit(t, e, debug("manifests/good.json", "more/debug-sysadmin.json"))
	assert.Equal(t, []string{"[autogen-ephemeral-no-privileged-debug] failed expression: variables.debugPodSpec.?ephemeralContainers.orValue([]).all(c, c.?securityContext.?privileged.orValue(false) != true)"}, res.Denials())
	// An old privileged debug container is not judged again.
	assert.Empty(t, admit(t, e, debug("more/debug-old-privileged.json", "more/debug-general-after-old.json")).Denials())
}
