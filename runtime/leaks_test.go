package runtime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/runtime"
)

// leakVariants moves the offending container of a bad pod into each place a
// policy that judges only spec.containers would miss: initContainers (next
// to a harmless container) and, through kubectl debug, ephemeralContainers.
func leakVariants(t *testing.T, bad *unstructured.Unstructured) map[string]*runtime.Request {
	t.Helper()
	good := manifest(t, "manifests/good.json")
	harmless := good.Object["spec"].(map[string]any)["containers"]
	offender := bad.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)

	init := bad.DeepCopy()
	spec := init.Object["spec"].(map[string]any)
	spec["initContainers"] = []any{offender}
	spec["containers"] = harmless

	debugged := good.DeepCopy()
	eph := map[string]any{"name": offender["name"], "image": offender["image"]}
	if sc, ok := offender["securityContext"]; ok {
		eph["securityContext"] = sc
	}
	debugged.Object["spec"].(map[string]any)["ephemeralContainers"] = []any{eph}
	debug := runtime.RequestFor(debugged, good, "shop")
	debug.SubResource = "ephemeralcontainers"
	return map[string]*runtime.Request{
		"initContainers":      runtime.RequestFor(init, nil, "shop"),
		"ephemeralContainers": debug,
	}
}

// Every example policy that denies a bad container in spec.containers must
// deny it in initContainers and ephemeralContainers too, naming it: the very
// leaks admitc exists to close. cel-naive.json is the design document's
// deliberately naive policy and is left out.
func TestExamplePoliciesDoNotLeak(t *testing.T) {
	files, err := filepath.Glob(examples + "policies/*")
	require.NoError(t, err)
	params := manifest(t, "params/registries-k8s.json")
	for _, f := range files {
		name := filepath.Base(f)
		if name == "cel-naive.json" {
			continue
		}
		e := engineFor(t, name)
		for _, fixture := range []string{"manifests/privileged.json", "manifests/untrusted-registry.json", "manifests/lookalike-registry.json", "more/lookalike-hub.json"} {
			bad := manifest(t, fixture)
			req := runtime.RequestFor(bad, nil, "shop")
			req.Params = []*unstructured.Unstructured{params}
			if admit(t, e, req).Allowed() {
				continue
			}
			offender := bad.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["name"].(string)
			for where, leak := range leakVariants(t, bad) {
				leak.Params = req.Params
				res := admit(t, e, leak)
				assert.False(t, res.Allowed(), "%s admits %s with the offender in %s", name, fixture, where)
				assert.True(t, mentions(res.Denials(), offender), "%s: no denial names container %q in %s: %v", name, offender, where, res.Denials())
			}
		}
	}
}

func mentions(msgs []string, s string) bool {
	for _, m := range msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func TestLeakFixturesExist(t *testing.T) {
	for _, f := range []string{"manifests/privileged.json", "manifests/untrusted-registry.json", "manifests/lookalike-registry.json", "more/lookalike-hub.json"} {
		_, err := os.Stat(examples + f)
		require.NoError(t, err)
	}
}
