package defaults

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/runtime"
)

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &u.Object))
	return u
}

func field(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	require.NoError(t, err)
	require.True(t, found, "%v is not set", path)
	return v
}

func TestApplyService(t *testing.T) {
	got, err := Apply(object(t, `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`))
	require.NoError(t, err)
	assert.Equal(t, "ClusterIP", field(t, got, "spec", "type"))
	assert.Equal(t, "None", field(t, got, "spec", "sessionAffinity"))
	assert.Equal(t, "Cluster", field(t, got, "spec", "internalTrafficPolicy"))
	port := field(t, got, "spec", "ports").([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(80)}, port)
	_, allocated := got.Object["spec"].(map[string]any)["clusterIP"]
	assert.False(t, allocated, "clusterIP is allocated by the registry, not defaulted")
}

func TestApplyPod(t *testing.T) {
	in := object(t, `
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  serviceAccountName: web
  containers:
  - name: latest
    image: nginx:latest
    resources: {limits: {memory: 64Mi}}
  - name: tagged
    image: nginx:1.30
  - name: untagged
    image: nginx
  volumes:
  - name: scratch
`)
	before := in.DeepCopy()
	got, err := Apply(in)
	require.NoError(t, err)
	assert.Equal(t, before, in, "Apply must not change its argument")
	containers := field(t, got, "spec", "containers").([]any)
	policies := []any{}
	for _, c := range containers {
		policies = append(policies, c.(map[string]any)["imagePullPolicy"])
	}
	assert.Equal(t, []any{"Always", "IfNotPresent", "Always"}, policies)
	first := containers[0].(map[string]any)
	assert.Equal(t, "/dev/termination-log", first["terminationMessagePath"])
	assert.Equal(t, "File", first["terminationMessagePolicy"])
	assert.Equal(t, map[string]any{"memory": "64Mi"}, first["resources"].(map[string]any)["requests"], "requests default to limits")
	assert.Equal(t, []any{map[string]any{"name": "scratch", "emptyDir": map[string]any{}}}, field(t, got, "spec", "volumes"))
	assert.Equal(t, "Always", field(t, got, "spec", "restartPolicy"))
	assert.Equal(t, "ClusterFirst", field(t, got, "spec", "dnsPolicy"))
	assert.Equal(t, "default-scheduler", field(t, got, "spec", "schedulerName"))
	assert.Equal(t, int64(30), field(t, got, "spec", "terminationGracePeriodSeconds"))
	assert.Equal(t, "web", field(t, got, "spec", "serviceAccount"), "the deprecated alias, set by the conversion round trip")
	assert.Equal(t, map[string]any{"name": "web", "labels": map[string]any{"app": "web"}}, got.Object["metadata"],
		"no metadata is invented: no creationTimestamp, uid or managedFields at admission")
}

func TestApplyDeployment(t *testing.T) {
	got, err := Apply(object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.k8s.io/pause:3.10"}]
`))
	require.NoError(t, err)
	assert.Equal(t, int64(1), field(t, got, "spec", "replicas"))
	assert.Equal(t, int64(10), field(t, got, "spec", "revisionHistoryLimit"))
	assert.Equal(t, int64(600), field(t, got, "spec", "progressDeadlineSeconds"))
	assert.Equal(t, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
		field(t, got, "spec", "strategy"))
	c := field(t, got, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	assert.Equal(t, "IfNotPresent", c["imagePullPolicy"])
	assert.Equal(t, "apps/v1", got.GetAPIVersion())
	assert.Equal(t, "Deployment", got.GetKind())
}

func TestApplyLeavesUnknownKindsAlone(t *testing.T) {
	for name, manifest := range map[string]string{
		"custom resource":       "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n",
		"unserved version":      "apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n",
		"internal version":      "apiVersion: __internal\nkind: Pod\nmetadata: {name: p}\n",
		"kind unknown in group": "apiVersion: apps/v1\nkind: Widget\nmetadata: {name: w}\n",
	} {
		t.Run(name, func(t *testing.T) {
			in := object(t, manifest)
			got, err := Apply(in)
			require.NoError(t, err)
			assert.Same(t, in, got)
		})
	}
}

func TestKnown(t *testing.T) {
	assert.True(t, Known(schema.GroupVersionKind{Version: "v1", Kind: "Service"}))
	assert.True(t, Known(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}))
	assert.False(t, Known(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}))
}

func TestApplyManifestsNamesTheBadOne(t *testing.T) {
	ms := []runtime.Manifest{
		{Source: "ok.yaml", Object: object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")},
		{Source: "bad.yaml#2", Object: object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: three}\n")},
	}
	_, err := ApplyManifests(ms)
	require.Error(t, err)
	assert.Equal(t, `bad.yaml#2: cannot apply the API server's defaults: Deployment web does not decode as the API server's apps/v1: `+
		`unrecognized type: int32; fix the manifest, or judge it as written with --no-defaults`, err.Error())
}

func TestApplyManifestsKeepsSources(t *testing.T) {
	ms := []runtime.Manifest{{Source: "svc.yaml", Object: object(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")}}
	got, err := ApplyManifests(ms)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "svc.yaml", got[0].Source)
	assert.Equal(t, "ClusterIP", field(t, got[0].Object, "spec", "type"))
	_, changed := ms[0].Object.Object["spec"]
	assert.False(t, changed, "the input manifests are not changed")
}
