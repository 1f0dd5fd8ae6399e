package pattern

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func patternOf(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal([]byte(s), &v))
	return v
}

func TestTranslateSmoke(t *testing.T) {
	p := patternOf(t, `
spec:
  containers:
  - name: "*"
    image: "!*:latest"
    =(securityContext):
      =(privileged): "false"
`)
	e, err := Translate(p, "object")
	require.NoError(t, err)
	t.Log(e.Result)
	for name, tc := range map[string]struct{ obj, want string }{
		"ok":         {`{spec: {containers: [{name: a, image: "nginx:1"}]}}`, "pass"},
		"latest":     {`{spec: {containers: [{name: a, image: "nginx:1"}, {name: b, image: "nginx:latest"}]}}`, "fail /spec/containers/1/image/"},
		"privileged": {`{spec: {containers: [{name: a, image: "nginx:1", securityContext: {privileged: true}}]}}`, "fail /spec/containers/0/securityContext/privileged/"},
		"no spec":    {`{}`, "fail /spec/"},
	} {
		got, err := evalString(t, e.Result, decode(t, tc.obj))
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
}
