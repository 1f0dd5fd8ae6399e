package cli

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const defaultsData = "testdata/defaults/"

// TestTestAppliesAPIServerDefaults judges manifests whose policies read
// fields only the API server's defaulting sets; --no-defaults judges them as
// written, where those fields are missing.
func TestTestAppliesAPIServerDefaults(t *testing.T) {
	cases := map[string]struct {
		policy, manifest     string
		defaulted, asWritten string
	}{
		"Service without type": {
			"service-policy.yaml", "service.yaml",
			"ALLOWED Service default/web\n",
			"DENIED Service default/web\n  deny [no-load-balancer] expression 'object.spec.type != 'LoadBalancer'' resulted in error: no such key: type\n",
		},
		"Service of type LoadBalancer": {
			"service-policy.yaml", "service-lb.yaml",
			"DENIED Service default/public\n  deny [no-load-balancer] LoadBalancer Services are not allowed\n",
			"DENIED Service default/public\n  deny [no-load-balancer] LoadBalancer Services are not allowed\n",
		},
		"Pod with a volume without a source": {
			"pod-policy.yaml", "pod-volume.yaml",
			"DENIED Pod default/scratch\n  deny [scratch-size] emptyDir volumes need a sizeLimit: scratch\n",
			"ALLOWED Pod default/scratch\n",
		},
		"Pod of a :latest image": {
			"pod-policy.yaml", "pod-latest.yaml",
			"ALLOWED Pod default/latest\n",
			"DENIED Pod default/latest\n  deny [latest-pulls-always] expression 'object.spec.containers.all(c, !c.image.endsWith(':latest') || c.imagePullPolicy == 'Always')' resulted in error: no such key: imagePullPolicy\n",
		},
		"Deployment without replicas or strategy": {
			"deployment-policy.yaml", "deployment.yaml",
			"ALLOWED Deployment default/web\n",
			"DENIED Deployment default/web\n  deny [bounded-rollout] expression 'object.spec.replicas <= 10 && object.spec.strategy.type == 'RollingUpdate'' resulted in error: no such key: replicas\n",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"test", "--policies", defaultsData + c.policy, defaultsData + c.manifest}
			out, stderr, _ := run(t, args...)
			assert.Empty(t, stderr)
			assert.Contains(t, out, c.defaulted)
			out, stderr, _ = run(t, append([]string{args[0], "--no-defaults"}, args[1:]...)...)
			assert.Empty(t, stderr)
			assert.Contains(t, out, c.asWritten)
		})
	}
}

func TestTestDefaultsTheOldObject(t *testing.T) {
	out, stderr, code := run(t, "test", "--policies", defaultsData+"service-policy.yaml",
		"--old", defaultsData+"service.yaml", defaultsData+"service.yaml")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "ALLOWED Service default/web\n1 object(s): 1 allowed, 0 denied, 0 with warnings\n", out)
}

func TestTestRefusesAManifestTheAPIServerCannotDecode(t *testing.T) {
	bad := t.TempDir() + "/bad.yaml"
	writeFile(t, bad, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: three}\n")
	_, stderr, code := run(t, "test", "--policies", defaultsData+"deployment-policy.yaml", bad)
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, bad+": cannot apply the API server's defaults: Deployment web does not decode as the API server's apps/v1: ")
	assert.Contains(t, stderr, "; fix the manifest, or judge it as written with --no-defaults\n")
}

func TestCELShowsDefaultedFields(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		":latest pulls Always":        {[]string{"object.spec.containers[0].imagePullPolicy", "--object", defaultsData + "pod-latest.yaml"}, "\"Always\"\n"},
		"a tag pulls IfNotPresent":    {[]string{"object.spec.containers[0].imagePullPolicy", "--object", defaultsData + "pod-volume.yaml"}, "\"IfNotPresent\"\n"},
		"a volume without a source":   {[]string{"object.spec.volumes[0]", "--object", defaultsData + "pod-volume.yaml"}, "{\n  \"emptyDir\": {},\n  \"name\": \"scratch\"\n}\n"},
		"a Service type":              {[]string{"object.spec.type", "--object", defaultsData + "service.yaml"}, "\"ClusterIP\"\n"},
		"the old object is defaulted": {[]string{"oldObject.spec.type", "--object", defaultsData + "service.yaml", "--old", defaultsData + "service.yaml"}, "\"ClusterIP\"\n"},
		"no creationTimestamp":        {[]string{"has(object.metadata.creationTimestamp)", "--object", defaultsData + "service.yaml"}, "false\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := run(t, append([]string{"cel"}, c.args...)...)
			require.Equal(t, ExitOK, code, stderr)
			assert.Equal(t, c.want, out)
		})
	}
}

func TestCELNoDefaults(t *testing.T) {
	_, stderr, code := run(t, "cel", "object.spec.containers[0].imagePullPolicy", "--no-defaults", "--object", defaultsData+"pod-latest.yaml")
	assert.Equal(t, ExitFailed, code)
	assert.Equal(t, "error: no such key: imagePullPolicy\n", stderr)
}

func TestNamespaceLabels(t *testing.T) {
	policy, labels, pod := defaultsData+"namespace-policy.yaml", defaultsData+"namespace-labels.yaml", defaultsData+"pod-team.yaml"
	cases := map[string]struct {
		args []string
		code int
		want string
	}{
		"the namespace of the team": {[]string{"--namespace-labels", labels, "-n", "shop"}, ExitOK, "ALLOWED Pod shop/cart\n"},
		"another team's namespace": {[]string{"--namespace-labels", labels, "-n", "payments"}, ExitFailed,
			"DENIED Pod payments/cart\n  deny [team-matches-namespace] the team label must be the namespace's: payments\n"},
		"a namespace the file does not name": {[]string{"--namespace-labels", labels, "-n", "shipping"}, ExitFailed,
			"DENIED Pod shipping/cart\n  deny [team-matches-namespace] the team label must be the namespace's: (none)\n"},
		"no file": {[]string{"-n", "shop"}, ExitFailed,
			"DENIED Pod shop/cart\n  deny [team-matches-namespace] the team label must be the namespace's: (none)\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, stderr, code := run(t, append(append([]string{"test", "--policies", policy}, c.args...), pod)...)
			assert.Equal(t, c.code, code, stderr)
			assert.Contains(t, out, c.want)
		})
	}
}

func TestCELNamespaceLabels(t *testing.T) {
	out, stderr, code := run(t, "cel", "namespaceObject.metadata.labels", "--namespace-labels", defaultsData+"namespace-labels.yaml",
		"-n", "payments", "--object", defaultsData+"pod-team.yaml")
	require.Equal(t, ExitOK, code, stderr)
	assert.JSONEq(t, `{"kubernetes.io/metadata.name": "payments", "team": "payments"}`, out)
}

func TestNamespaceLabelsFileErrors(t *testing.T) {
	bad := t.TempDir() + "/labels.yaml"
	writeFile(t, bad, "shop: [team]\n")
	_, stderr, code := run(t, "test", "--namespace-labels", bad, defaultsData+"pod-team.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--namespace-labels "+bad+": want a map of namespace name to labels: ")
	_, stderr, code = run(t, "cel", "1", "--namespace-labels", "no-such-file.yaml", "--object", defaultsData+"pod-team.yaml")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "read --namespace-labels: open no-such-file.yaml: no such file or directory")
}

// compareVerdicts runs admitc compare -o json and returns each engine's
// verdict by manifest name.
func compareVerdicts(t *testing.T, args ...string) (map[string]map[string]string, int) {
	t.Helper()
	out, stderr, code := run(t, append([]string{"compare", "-o", "json"}, args...)...)
	require.NotEqual(t, ExitUsage, code, stderr)
	var doc struct {
		Rows []struct {
			Name    string `json:"name"`
			Results []struct {
				Engine  string `json:"engine"`
				Verdict string `json:"verdict"`
			} `json:"results"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	got := map[string]map[string]string{}
	for _, r := range doc.Rows {
		got[r.Name] = map[string]string{}
		for _, res := range r.Results {
			if res.Engine == "admitc" || res.Engine == "kubernetes" {
				got[r.Name][res.Engine] = res.Verdict
			}
		}
	}
	return got, code
}

func TestCompareAppliesDefaultsForEveryEngine(t *testing.T) {
	got, code := compareVerdicts(t, "--policies", defaultsData+"service-policy.yaml", defaultsData+"service.yaml", defaultsData+"service-lb.yaml")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, map[string]map[string]string{
		"web":    {"admitc": "allowed", "kubernetes": "allowed"},
		"public": {"admitc": "denied", "kubernetes": "denied"},
	}, got)
	got, code = compareVerdicts(t, "--policies", defaultsData+"pod-policy.yaml", defaultsData+"pod-latest.yaml", defaultsData+"pod-volume.yaml")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, map[string]map[string]string{
		"latest":  {"admitc": "allowed", "kubernetes": "allowed"},
		"scratch": {"admitc": "denied", "kubernetes": "denied"},
	}, got)
	got, code = compareVerdicts(t, "--no-defaults", "--policies", defaultsData+"service-policy.yaml", defaultsData+"service.yaml")
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, map[string]map[string]string{"web": {"admitc": "denied", "kubernetes": "denied"}}, got)
}

func TestCompareNamespaceLabels(t *testing.T) {
	base := []string{"--policies", defaultsData + "namespace-policy.yaml", "--namespace-labels", defaultsData + "namespace-labels.yaml"}
	got, code := compareVerdicts(t, append(base, "-n", "shop", defaultsData+"pod-team.yaml")...)
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, map[string]map[string]string{"cart": {"admitc": "allowed", "kubernetes": "allowed"}}, got)
	got, code = compareVerdicts(t, append(base, "-n", "payments", defaultsData+"pod-team.yaml")...)
	assert.Equal(t, ExitOK, code)
	assert.Equal(t, map[string]map[string]string{"cart": {"admitc": "denied", "kubernetes": "denied"}}, got)
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(name, []byte(data), 0o600))
}
