package typed

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/celbuild"
	"github.com/admitc/admitc/internal/kubeschema"
)

func podSchema(t *testing.T) kubeschema.Node {
	r, err := kubeschema.NewResolver()
	require.NoError(t, err)
	n, ok := r.Schema(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	require.True(t, ok)
	return n
}

func translate(t *testing.T, pattern string) (string, string) {
	var p any
	require.NoError(t, yaml.Unmarshal([]byte(pattern), &p))
	b := celbuild.New()
	c, err := NewTranslator(b).Pattern(p, b.Ident("object"), podSchema(t))
	require.NoError(t, err)
	return b.MustPrint(c.OK), b.MustPrint(c.Path)
}

// Published Pod Security and best-practice patterns read as a person
// writes them.
func TestPatternsReadAsWritten(t *testing.T) {
	for p, want := range map[string]string{`
spec:
  =(ephemeralContainers):
  - =(securityContext):
      =(privileged): "false"
  =(initContainers):
  - =(securityContext):
      =(privileged): "false"
  containers:
  - =(securityContext):
      =(privileged): "false"
`: `(object.spec.containers + object.spec.?initContainers.orValue([]) + object.spec.?ephemeralContainers.orValue([])).all(container, !container.?securityContext.?privileged.orValue(false))`, `
spec:
  =(hostPID): "false"
  =(hostIPC): "false"
  =(hostNetwork): "false"
`: `!object.spec.?hostIPC.orValue(false) && !object.spec.?hostNetwork.orValue(false) && !object.spec.?hostPID.orValue(false)`, `
spec:
  containers:
  - image: "!*:latest"
`: `object.spec.containers.all(container, !container.image.endsWith(":latest") || container.image == "!*:latest")`, `
spec:
  containers:
  - resources:
      requests:
        memory: "?*"
        cpu: "?*"
      limits:
        memory: "?*"
`: `object.spec.containers.all(container, container.resources.?limits.?memory.hasValue() && container.resources.?requests.?cpu.hasValue() && has(container.resources.requests.memory))`, `
spec:
  =(volumes):
  - X(hostPath): "null"
`: `object.spec.?volumes.orValue([]).all(volume, !has(volume.hostPath))`, `
metadata:
  labels:
    app.kubernetes.io/name: "?*"
`: `object.metadata.?labels[?"app.kubernetes.io/name"].orValue("") != ""`, `
spec:
  containers:
  - =(securityContext):
      =(runAsUser): ">0"
`: `object.spec.containers.all(container, container.?securityContext.?runAsUser.orValue(1) > 0)`, `
spec:
  containers:
  - =(readinessProbe):
      tcpSocket:
        port: "8080"
      initialDelaySeconds: ">=10.000000"
`: `object.spec.containers.all(container, !has(container.readinessProbe) || container.readinessProbe.?initialDelaySeconds.orValue(0) >= 10 && has(container.readinessProbe.tcpSocket) && ((type(container.readinessProbe.tcpSocket.port) == int) ? (container.readinessProbe.tcpSocket.port == 8080) : (isQuantity(container.readinessProbe.tcpSocket.port) && quantity(container.readinessProbe.tcpSocket.port) == quantity("8080"))))`} {
		ok, _ := translate(t, p)
		assert.Equal(t, want, ok)
	}
}

// Lists checked alike (a pod's container lists) share one failure path:
// one comprehension over the lists, each list's name read from a list of
// the names, in Kyverno's order of the pattern's keys. A list checked
// apart, or between them in that order, keeps its own.
func TestListsCheckedAlikeShareTheirFailurePath(t *testing.T) {
	_, path := translate(t, `
spec:
  =(ephemeralContainers):
  - =(securityContext):
      =(privileged): "false"
  =(initContainers):
  - =(securityContext):
      =(privileged): "false"
  containers:
  - =(securityContext):
      =(privileged): "false"
`)
	assert.Equal(t, `[object.spec.?ephemeralContainers.orValue([]), object.spec.?initContainers.orValue([]), object.spec.containers]`+
		`.transformList(k, containers, containers.transformList(i, container, container.?securityContext.?privileged.orValue(false), `+
		`"/spec/" + ["ephemeralContainers", "initContainers", "containers"][k] + "/" + string(i) + "/securityContext/privileged/")).flatten()[0]`, path)

	_, path = translate(t, `
spec:
  =(initContainers):
  - image: "!*:latest"
  containers:
  - name: "?*"
`)
	assert.Equal(t, `(object.spec.?initContainers.orValue([]).transformList(i, container, container.image.endsWith(":latest") && container.image != "!*:latest", "/spec/initContainers/" + string(i) + "/image/") + `+
		`object.spec.containers.transformList(i, container, container.name == "", "/spec/containers/" + string(i) + "/name/"))[0]`, path, "checked apart")
}
