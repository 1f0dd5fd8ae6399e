package variants

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels:
    app.kubernetes.io/name: web
spec:
  containers:
  - name: app
    image: ghcr.io/acme/app:1.2.3
    ports:
    - containerPort: 8080
      name: http
    resources:
      limits:
        memory: 128Mi
    securityContext:
      runAsNonRoot: true
      allowPrivilegeEscalation: false
`

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: ghcr.io/acme/app:1.2.3
`

func object(t *testing.T, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
	// As the API server decodes it: whole numbers are int64.
	return (&unstructured.Unstructured{Object: normalizeNumbers(obj).(map[string]any)}).Object
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case float64:
		return jsonNumber(t)
	}
	return v
}

func generate(t *testing.T, obj map[string]any, opts Options) []Variant {
	t.Helper()
	vs, err := Generate(obj, opts)
	require.NoError(t, err)
	return vs
}

func TestGenerateIsDeterministicForASeed(t *testing.T) {
	opts := Options{Seed: 7, Scalars: []any{">=100m", "1-10"}, Paths: []string{"spec.containers[*].resources.requests.cpu"}}
	a, b := generate(t, object(t, pod), opts), generate(t, object(t, pod), opts)
	require.Equal(t, len(a), len(b))
	for i := range a {
		assert.Equal(t, a[i].Name, b[i].Name)
		assert.Equal(t, render(a[i].Object), render(b[i].Object), a[i].Name)
	}
	opts.Seed = 8
	c := generate(t, object(t, pod), opts)
	assert.NotEqual(t, names(a), names(c), "another seed picks other variants")
}

func names(vs []Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestGenerateGivesDistinctValidObjects(t *testing.T) {
	for name, doc := range map[string]string{"pod": pod, "deployment": deployment} {
		t.Run(name, func(t *testing.T) {
			obj := object(t, doc)
			before := render(obj)
			vs := generate(t, obj, Options{Seed: 1, Count: 80})
			require.Len(t, vs, 80)
			assert.Equal(t, before, render(obj), "the input is not modified")
			seen := map[string]bool{before: true}
			for _, v := range vs {
				data, err := json.Marshal(v.Object)
				require.NoError(t, err, v.Name)
				assert.False(t, seen[string(data)], "%s: a duplicate or the original", v.Name)
				seen[string(data)] = true
				u := &unstructured.Unstructured{Object: v.Object}
				assert.NotPanics(t, func() { u.DeepCopy() }, "%s: only JSON types", v.Name)
				assert.Equal(t, obj["apiVersion"], u.GetAPIVersion(), v.Name)
				assert.Equal(t, obj["kind"], u.GetKind(), v.Name)
				assert.Equal(t, "web", u.GetName(), v.Name)
			}
		})
	}
}

func TestGenerateDefaultCountCoversEveryKindOfChange(t *testing.T) {
	vs := generate(t, object(t, pod), Options{Seed: 3, Scalars: []any{int64(1000)}, Paths: []string{"spec.securityContext.runAsUser"}})
	require.Len(t, vs, DefaultCount)
	all := strings.Join(names(vs), "\n")
	assert.Equal(t, `spec.containers[0].image=">=100m"`, setTo(kindBoundary, path{"spec", "containers", 0, "image"}, ">=100m").name)
	for _, want := range []string{"remove ", "=null", "empty ", "extra spec.", "spec.securityContext.runAsUser="} {
		assert.Contains(t, all, want)
	}
}

func TestGenerateChangesPodTemplatesOfControllers(t *testing.T) {
	vs := generate(t, object(t, deployment), Options{Seed: 1, Count: 400, Scalars: []any{"app.kubernetes.io/*"},
		Paths: []string{"metadata.labels[\"app.kubernetes.io/name\"]", "spec.hostNetwork"}})
	byName := map[string]Variant{}
	for _, v := range vs {
		byName[v.Name] = v
	}
	v, ok := byName["extra spec.template.spec.initContainers with privileged"]
	require.True(t, ok, strings.Join(names(vs), "\n"))
	init, _ := get(v.Object, path{"spec", "template", "spec", "initContainers", 0})
	assert.Equal(t, map[string]any{"name": "extra", "image": "ghcr.io/acme/app:1.2.3", "securityContext": map[string]any{"privileged": true}}, init)
	assert.Contains(t, byName, "spec.template.spec.hostNetwork=true")
	assert.Contains(t, byName, `spec.template.metadata.labels["app.kubernetes.io/name"]="app.kubernetes.io/abc"`)
	assert.Contains(t, byName, `metadata.labels["app.kubernetes.io/name"]="app.kubernetes.io/"`)
}

func TestBoundaries(t *testing.T) {
	for name, tc := range map[string]struct {
		scalars []any
		want    []any
	}{
		"quantity operator": {[]any{">=100m"}, []any{">=100m", "100m", "100mx", "99m", "99", int64(99), "100", int64(100), "101m", "101", int64(101), 100.5}},
		"range":             {[]any{"1-3"}, []any{"1-3", "1", "1x", "0", int64(0), int64(1), "2", int64(2), 1.5, "3", "3x", int64(3), "4", int64(4), 3.5}},
		"number":            {[]any{int64(10)}, []any{int64(9), "9", int64(10), "10", int64(11), "11", 10.5}},
		"boolean":           {[]any{true}, []any{true, false, "true", "false"}},
		"alternatives":      {[]any{"RuntimeDefault | Localhost"}, []any{"RuntimeDefault | Localhost", "RuntimeDefault", "RuntimeDefaultx", "Localhost", "Localhostx"}},
		"wildcard":          {[]any{"!*:latest"}, []any{"!*:latest", "*:latest", "*:latestx", ":latest", "abc:latest", "a:latest"}},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, boundaries(tc.scalars)) })
	}
}

func TestPaths(t *testing.T) {
	p, err := parsePath(`spec.containers[*].env[0]["a.b"].value`)
	require.NoError(t, err)
	assert.Equal(t, path{"spec", "containers", anyIndex{}, "env", 0, "a.b", "value"}, p)
	obj := object(t, pod)
	assert.Equal(t, []path{{"spec", "containers", 0, "env", 0, "a.b", "value"}}, expand(obj, p))
	assert.Equal(t, `spec.containers[0].env[0]["a.b"].value`, expand(obj, p)[0].String())
	_, err = Generate(obj, Options{Paths: []string{"spec.containers[x]"}})
	assert.EqualError(t, err, `variants: path "spec.containers[x]": bad index [x]`)
}

// Retyped writes each kind of value where a policy looks and the object
// has the map to hold it (under a pod controller's template), and keeps
// the identity.
func TestRetyped(t *testing.T) {
	obj := object(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop},
	  spec: {template: {spec: {containers: [{name: a, securityContext: {privileged: false}}, {name: b}]}}}}`)
	got, err := Retyped(obj, []string{"spec.containers[*].securityContext.privileged", "metadata.name"})
	require.NoError(t, err)
	require.Len(t, got, len(TypeValues))
	for i, vs := range got {
		var ns []string
		for _, v := range vs {
			ns = append(ns, v.Name)
			assert.Equal(t, "web", v.Object["metadata"].(map[string]any)["name"])
		}
		value := render(TypeValues[i])
		assert.Equal(t, []string{"spec.template.spec.containers[0].securityContext.privileged=" + value}, ns)
	}
	_, err = Retyped(obj, []string{"spec[x"})
	assert.Error(t, err)
}

// QueriedPaths follows the field chains of a rule's queries, a foreach
// element's under its list.
func TestQueriedPaths(t *testing.T) {
	rule := map[string]any{
		"preconditions": map[string]any{"all": []any{map[string]any{"key": "{{ request.object.spec.hostNetwork || false }}"}}},
		"validate": map[string]any{"foreach": []any{map[string]any{
			"list": "request.object.spec.containers",
			"deny": map[string]any{"conditions": map[string]any{"any": []any{
				map[string]any{"key": "{{ element.securityContext.capabilities.drop[] }}"},
				map[string]any{"key": "{{ length(request.object.metadata.labels) }}"},
			}}},
		}}},
	}
	assert.Equal(t, []string{
		"metadata.labels", "spec.containers",
		"spec.containers[*].securityContext.capabilities.drop[*]", "spec.hostNetwork",
	}, QueriedPaths(rule))
}
