package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

const examples = "../examples/"

func engineFor(t testing.TB, policyFiles ...string) *runtime.Engine {
	t.Helper()
	var paths []string
	for _, f := range policyFiles {
		paths = append(paths, examples+"policies/"+f)
	}
	src, err := compiler.ReadSources(paths)
	require.NoError(t, err)
	return engineFromSources(t, src)
}

func engineFromSources(t testing.TB, src []compiler.Source) *runtime.Engine {
	t.Helper()
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	return e
}

func engineFromYAML(t testing.TB, policy string) *runtime.Engine {
	return engineFromSources(t, []compiler.Source{{Name: "inline.yaml", Data: []byte(policy)}})
}

func manifest(t testing.TB, path string) *unstructured.Unstructured {
	t.Helper()
	ms, err := runtime.ReadManifests([]string{examples + path})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	return ms[0].Object
}

func admit(t testing.TB, e *runtime.Engine, req *runtime.Request) *runtime.Result {
	t.Helper()
	res, err := e.Admit(context.Background(), req)
	require.NoError(t, err)
	return res
}

func messages(vs []runtime.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Labelled())
	}
	return out
}

func TestCELPolicies(t *testing.T) {
	e := engineFor(t, "cel-policies.json")
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/privileged.json"), nil, "shop"))
	assert.Equal(t, []string{"[cc-admission-no-privileged] privileged containers are not allowed: web"}, res.Denials())

	res = admit(t, e, runtime.RequestFor(manifest(t, "manifests/tag-only.json"), nil, "shop"))
	assert.Equal(t, []string{"[cc-admission-digest] images must be pinned by digest: web"}, res.Denials())

	res = admit(t, e, runtime.RequestFor(manifest(t, "manifests/no-limit.json"), nil, "shop"))
	assert.True(t, res.Allowed())
	assert.Equal(t, []string{"[cc-admission-memory-limit] set a memory limit on every container"}, res.Warnings())
	assert.Equal(t, map[string]string{
		"cc-admission-memory-limit":                          `["set a memory limit on every container"]`,
		"cc-admission-memory-limit.containers-without-limit": "web",
	}, res.Annotations())

	// The digest policy's matchCondition skips exempt pods.
	exempt := manifest(t, "manifests/tag-only.json")
	exempt.SetLabels(map[string]string{"cloudcaptain.io/digest-exempt": "true"})
	assert.True(t, admit(t, e, runtime.RequestFor(exempt, nil, "shop")).Allowed())
}

func TestNaiveCELFailsForTheWrongReason(t *testing.T) {
	e := engineFor(t, "cel-naive.json")
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	assert.Equal(t, []string{"[cc-admission-naive-privileged] expression 'object.spec.containers.all(c, c.securityContext.privileged == false)' resulted in error: no such key: securityContext"}, res.Denials())
	assert.True(t, res.Violations[0].Error)

	// failurePolicy: Ignore drops the evaluation error: the pod is admitted.
	ignore := engineFromYAML(t, `policies:
  - name: naive
    type: cel
    failurePolicy: Ignore
    validations:
      - expression: object.spec.containers.all(c, c.securityContext.privileged == false)
`)
	assert.Empty(t, admit(t, ignore, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop")).Violations)

	// Under [Warn] the error is a warning, not a denial.
	warn := engineFromYAML(t, `policies:
  - name: naive
    type: cel
    actions: [Warn]
    validations:
      - expression: object.spec.containers.all(c, c.securityContext.privileged == false)
`)
	res = admit(t, warn, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	assert.True(t, res.Allowed())
	assert.Len(t, res.Warnings(), 1)
}

func TestCommutativeErrors(t *testing.T) {
	// all() is false if any element is false, even when another errors.
	e := engineFromYAML(t, `policies:
  - name: all-false-wins
    type: cel
    validations:
      - expression: "[{'a': 1}, {'b': 2}].all(m, m.a == 2)"
        message: a must be 2
`)
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	assert.Equal(t, []string{"[all-false-wins] a must be 2"}, res.Denials())
	assert.False(t, res.Violations[0].Error)
}

func TestMessageRules(t *testing.T) {
	e := engineFromYAML(t, `policies:
  - name: messages
    type: cel
    validations:
      - expression: "false"
        messageExpression: "'  from expression  '"
        message: static
      - expression: "false"
        messageExpression: "'two\\nlines'"
        message: static wins over a multi-line messageExpression
      - expression: "false"
        messageExpression: "'   '"
      - expression: "1 == 2"
`)
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	assert.Equal(t, []string{
		"[messages] from expression",
		"[messages] static wins over a multi-line messageExpression",
		"[messages] failed expression: false",
		"[messages] failed expression: 1 == 2",
	}, res.Denials())
}

func TestDefaultRequests(t *testing.T) {
	e := engineFor(t, "policies.json")
	// As written: no resources at all, so the whole resources object is added.
	raw := manifest(t, "manifests/no-limit.json")
	res := admit(t, e, runtime.RequestFor(raw, nil, "shop"))
	require.Len(t, res.Patches, 1)
	assert.Equal(t, []runtime.PatchOp{{Op: "add", Path: "/spec/containers/0/resources", Value: map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}}}, res.Patches[0].Ops)

	// As the API server sends it, defaulted with resources: {}: only requests are added.
	defaulted := raw.DeepCopy()
	containers, _, _ := unstructured.NestedSlice(raw.Object, "spec", "containers")
	containers[0].(map[string]any)["resources"] = map[string]any{}
	require.NoError(t, unstructured.SetNestedSlice(defaulted.Object, containers, "spec", "containers"))
	res = admit(t, e, runtime.RequestFor(defaulted, nil, "shop"))
	assert.Equal(t, []runtime.PatchOp{{Op: "add", Path: "/spec/containers/0/resources/requests", Value: map[string]any{"cpu": "100m", "memory": "128Mi"}}}, res.Patch)

	// A limit without a request becomes the request; present requests are kept.
	partial := manifest(t, "manifests/good.json")
	containers, _, _ = unstructured.NestedSlice(partial.Object, "spec", "containers")
	containers[0].(map[string]any)["resources"] = map[string]any{"limits": map[string]any{"memory": "64Mi"}, "requests": map[string]any{"cpu": "250m"}}
	require.NoError(t, unstructured.SetNestedSlice(partial.Object, containers, "spec", "containers"))
	res = admit(t, e, runtime.RequestFor(partial, nil, "shop"))
	assert.Equal(t, []runtime.PatchOp{{Op: "add", Path: "/spec/containers/0/resources/requests/memory", Value: "64Mi"}}, res.Patch)

	// Idempotent: mutating the mutated object yields an empty patch.
	again := admit(t, e, runtime.RequestFor(res.Object, nil, "shop"))
	assert.Empty(t, again.Patch)
	assert.Empty(t, again.Patches)
}

func TestAddLabelsEscapesThePatchPath(t *testing.T) {
	e := engineFor(t, "labels-policy.json")
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	assert.Equal(t, []runtime.PatchOp{{Op: "add", Path: "/metadata/labels/cloudcaptain.io~1mutated-by", Value: "admitc"}}, res.Patch)
	assert.Equal(t, "admitc", res.Object.GetLabels()["cloudcaptain.io/mutated-by"])
	assert.Empty(t, admit(t, e, runtime.RequestFor(res.Object, nil, "shop")).Patch, "second run must be a no-op")

	unlabelled := manifest(t, "manifests/good.json")
	unlabelled.SetLabels(nil)
	res = admit(t, e, runtime.RequestFor(unlabelled, nil, "shop"))
	assert.Equal(t, []runtime.PatchOp{{Op: "add", Path: "/metadata/labels", Value: map[string]any{"cloudcaptain.io/mutated-by": "admitc"}}}, res.Patch)

	// The policy matches CREATE only.
	update := runtime.RequestFor(manifest(t, "manifests/good.json"), manifest(t, "manifests/good.json"), "shop")
	assert.Empty(t, admit(t, e, update).Patch)
}

func TestParams(t *testing.T) {
	e := engineFor(t, "params-policy.yaml")
	hub, k8s := manifest(t, "params/registries-hub.json"), manifest(t, "params/registries-k8s.json")
	pod := manifest(t, "manifests/tag-only.json") // docker.io/library/nginx

	req := runtime.RequestFor(pod, nil, "shop")
	req.Params = []*unstructured.Unstructured{hub}
	assert.True(t, admit(t, e, req).Allowed())

	req.Params = []*unstructured.Unstructured{k8s}
	assert.Equal(t, []string{"[cc-admission-registries-param] images must come from registry.k8s.io: web (docker.io/library/nginx:1.30-alpine)"}, admit(t, e, req).Denials())

	req.Params = nil
	assert.Equal(t, []string{"[cc-admission-registries-param] failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"}, admit(t, e, req).Denials())

	allow := engineFromYAML(t, `policies:
  - name: registries
    type: cel
    paramKind: {apiVersion: v1, kind: ConfigMap}
    paramRef: {name: allowed-registries, parameterNotFoundAction: Allow}
    validations:
      - expression: "object.spec.containers.all(c, c.image.startsWith(params.data.registries))"
`)
	assert.True(t, admit(t, allow, runtime.RequestFor(pod, nil, "shop")).Allowed())
}

func TestNoHostPath(t *testing.T) {
	e := engineFor(t, "no-host-path.yaml")
	cases := map[string][]string{
		"more/hostpath-root.json":       {`[no-host-path] volume "host-root" mounts hostPath "/" (spec.volumes[0].hostPath.path), which is not under an allowed path (/var/log)`},
		"more/hostpath-varlog-app.json": nil,
		"more/hostpath-varlogs.json":    {`[no-host-path] volume "logs" mounts hostPath "/var/logs" (spec.volumes[0].hostPath.path), which is not under an allowed path (/var/log)`},
		"more/deployment-hostpath.json": {`[no-host-path] volume "host-root" mounts hostPath "/" (spec.template.spec.volumes[0].hostPath.path), which is not under an allowed path (/var/log)`},
		"manifests/good.json":           nil,
	}
	cel := engineFor(t, "cel-policies.json")
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			res := admit(t, e, runtime.RequestFor(manifest(t, file), nil, "shop"))
			assert.Equal(t, want, res.Denials())
			if manifest(t, file).GetKind() == "Pod" {
				// The CEL twin in cel-policies.json agrees.
				celRes := admit(t, cel, runtime.RequestFor(manifest(t, file), nil, "shop"))
				hostPathDenied := false
				for _, v := range celRes.Violations {
					hostPathDenied = hostPathDenied || v.Policy == "cc-admission-no-host-path"
				}
				assert.Equal(t, want != nil, hostPathDenied)
			}
		})
	}
}

func TestAllContainerListsAndRegistries(t *testing.T) {
	e := engineFor(t, "policies.json")
	cases := map[string][]string{
		"more/init-privileged.json":      {`[disallow-privileged] container "setup" is privileged (spec.initContainers[0].securityContext.privileged)`},
		"more/ephemeral-privileged.json": {`[disallow-privileged] container "debug" is privileged (spec.ephemeralContainers[0].securityContext.privileged)`},
		"more/lookalike-hub.json":        {`[allowed-registries] image "docker.io.evil.example/library/nginx:1.30@sha256:4f7a9c0e1b2d3c4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd" in container "web" (spec.containers[0].image) resolves to docker.io.evil.example/library/nginx, which is not under an allowed registry (registry.k8s.io, docker.io/library)`},
		"more/short-name.json":           nil,
		"more/statefulset-root.json":     {`[run-as-non-root] container "db" may run as root: set runAsNonRoot: true (spec.template.spec.containers[0].securityContext.runAsNonRoot, or in the pod's securityContext)`},
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			assert.Equal(t, want, admit(t, e, runtime.RequestFor(manifest(t, file), nil, "shop")).Denials())
		})
	}
}

func TestKubectlDebugJudgesOnlyNewEphemeralContainers(t *testing.T) {
	e := engineFor(t, "policies.json")
	debug := func(old, obj string) *runtime.Request {
		req := runtime.RequestFor(manifest(t, obj), manifest(t, old), "shop")
		req.SubResource = "ephemeralcontainers"
		return req
	}
	res := admit(t, e, debug("manifests/good.json", "more/debug-sysadmin.json"))
	assert.Equal(t, []string{`[disallow-privileged] container "debugger-sysadmin" is privileged (spec.ephemeralContainers[0].securityContext.privileged)`}, res.Denials())
	assert.Empty(t, res.Patch, "mutating policies do not match the subresource")

	assert.True(t, admit(t, e, debug("manifests/good.json", "more/debug-general.json")).Allowed())
	// An old privileged debug container is not judged again.
	assert.True(t, admit(t, e, debug("more/debug-old-privileged.json", "more/debug-general-after-old.json")).Allowed())
	// Without the subresource the whole pod is judged.
	whole := runtime.RequestFor(manifest(t, "more/debug-general-after-old.json"), nil, "shop")
	assert.False(t, admit(t, e, whole).Allowed())
}

func TestResponse(t *testing.T) {
	e := engineFor(t, "policies.json")
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/untrusted-registry.json"), nil, "shop"))
	resp, err := res.Response("uid-1", true)
	require.NoError(t, err)
	b, err := json.Marshal(resp)
	require.NoError(t, err)
	assert.JSONEq(t, `{
	  "uid": "uid-1", "allowed": false,
	  "status": {"metadata": {}, "status": "Failure", "code": 403, "reason": "Forbidden",
	    "message": "[allowed-registries] image \"quay.io/evil/miner:latest\" in container \"miner\" (spec.containers[0].image) resolves to quay.io/evil/miner, which is not under an allowed registry (registry.k8s.io, docker.io/library)"},
	  "warnings": ["[require-digest] image \"quay.io/evil/miner:latest\" in container \"miner\" is not pinned by digest (@sha256:...)"],
	  "auditAnnotations": {"require-digest": "[\"image \\\"quay.io/evil/miner:latest\\\" in container \\\"miner\\\" is not pinned by digest (@sha256:...)\"]"}
	}`, string(b))

	res = admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	resp, err = res.Response("uid-2", true)
	require.NoError(t, err)
	assert.True(t, resp.Allowed)
	assert.Equal(t, `[{"op":"add","path":"/spec/containers/0/resources/requests","value":{"cpu":"100m","memory":"64Mi"}}]`, string(resp.Patch))
	assert.Equal(t, "JSONPatch", string(*resp.PatchType))
}

func TestExampleManifestsDecide(t *testing.T) {
	// The document's eleven manifests: 5 allowed, 6 denied, 4 with warnings.
	e := engineFor(t, "policies.json")
	files, err := filepath.Glob(examples + "manifests/*.json")
	require.NoError(t, err)
	require.Len(t, files, 11)
	allowed, warned := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		ms, err := runtime.DecodeManifests(f, data)
		require.NoError(t, err)
		res := admit(t, e, runtime.RequestFor(ms[0].Object, nil, "default"))
		if res.Allowed() {
			allowed++
		}
		if len(res.Warnings()) > 0 {
			warned++
		}
	}
	assert.Equal(t, 5, allowed)
	assert.Equal(t, 4, warned)
}

func TestCostBudgetStopsRunawayExpressions(t *testing.T) {
	// Nested comprehensions over a large list exceed the API server's
	// per-expression cost limit: the evaluation stops with an error (a
	// violation under Fail) instead of hanging the request.
	e := engineFromYAML(t, `policies:
  - name: runaway
    type: cel
    variables:
      - name: big
        expression: "[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, [0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, [0,1,2,3,4,5,6,7,8,9].map(f, a+b+c+d+e+f))))))"
    validations:
      - expression: "size(variables.big) > 0"
`)
	res := admit(t, e, runtime.RequestFor(manifest(t, "manifests/good.json"), nil, "shop"))
	require.Len(t, res.Violations, 1)
	assert.True(t, res.Violations[0].Error)
	assert.Contains(t, res.Violations[0].Message, "cost")
}

func TestNamespaceObject(t *testing.T) {
	e := engineFromYAML(t, `policies:
  - name: tier
    type: cel
    validations:
      - expression: "namespaceObject.metadata.labels['tier'] != 'prod' || object.spec.containers.all(c, has(c.resources) && has(c.resources.limits))"
        messageExpression: "'namespace ' + namespaceObject.metadata.name + ' is prod: set limits'"
`)
	req := runtime.RequestFor(manifest(t, "manifests/no-limit.json"), nil, "shop")
	req.NamespaceLabels = map[string]string{"tier": "prod"}
	assert.Equal(t, []string{"[tier] namespace shop is prod: set limits"}, admit(t, e, req).Denials())
	req.NamespaceLabels = map[string]string{"tier": "dev"}
	assert.True(t, admit(t, e, req).Allowed())
}
