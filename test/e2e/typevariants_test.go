//go:build e2e

package e2e

import (
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/defaults"
	"github.com/admitc/admitc/internal/variants"
)

// typeVariantsPerFixture is how many type variants each fixture is decided
// on: two of each kind of value (variants.TypeValues), on resources and
// paths picked with a seed from the fixture's name; E2E_TYPE_VARIANTS sets
// another number (0: none).
func typeVariantsPerFixture(t *testing.T) int {
	n := 2 * 5
	if s := os.Getenv("E2E_TYPE_VARIANTS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, "E2E_TYPE_VARIANTS")
	}
	return n
}

// typeVariants writes variants of the resources where the policy compares
// a value, set to a map, a list, a string, a number or null, to files in
// which no two objects share kind, namespace and name (admitc test reports
// objects by them). A variant the API server refuses before admission (it
// does not decode, or fails validation), or that admitc's defaulting cannot
// read, is logged and counted as refused, not compared. Call it before the
// fixture's policies are applied.
func typeVariants(t *testing.T, policy, resources string) ([]string, int) {
	t.Helper()
	paths := comparedPaths(t, policy)
	var byKind [][]variants.Variant
	for _, o := range decode(t, resources, mustRead(t, resources)) {
		if o.GetNamespace() == "" && !clusterScoped(o.GetKind()) {
			o.SetNamespace("default")
		}
		groups, err := variants.Retyped(o.Object, paths)
		require.NoError(t, err)
		for i, g := range groups {
			if len(byKind) <= i {
				byKind = append(byKind, nil)
			}
			byKind[i] = append(byKind[i], g...)
		}
	}
	h := fnv.New64a()
	h.Write([]byte(policy))
	rng := rand.New(rand.NewSource(int64(h.Sum64() >> 1)))
	var picked []*unstructured.Unstructured
	refused := 0
	for i, n := 0, typeVariantsPerFixture(t); i < n && len(byKind) > 0; i++ {
		g := byKind[i%len(byKind)]
		if len(g) == 0 {
			continue
		}
		k := rng.Intn(len(g))
		v := g[k]
		byKind[i%len(byKind)] = append(g[:k:k], g[k+1:]...)
		u := &unstructured.Unstructured{Object: v.Object}
		if reason := refusedOutsideAdmission(t, u); reason != "" {
			t.Logf("%s: type variant %q not compared: %s", resources, v.Name, reason)
			refused++
			continue
		}
		picked = append(picked, u)
	}
	return writeBatches(t, picked), refused
}

// refusedOutsideAdmission is why the API server refuses obj before
// admission (it does not decode, or fails validation) or admitc's
// defaulting cannot read it, or "". A denial by a policy (another
// fixture's, still being removed: a denial names its binding) is no
// refusal.
func refusedOutsideAdmission(t *testing.T, obj *unstructured.Unstructured) string {
	ensureNamespace(t, obj.GetNamespace())
	got := dryRunCreate(t, obj, obj.GetNamespace())
	if err := got.err; err != nil && !strings.Contains(err.Error(), "with binding '") && (apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)) {
		return "the API server refused it: " + err.Error()
	}
	if _, err := defaults.Apply(obj.DeepCopy()); err != nil {
		return "admitc cannot read it: " + err.Error()
	}
	return ""
}

// comparedPaths are the paths of the object the policy file's rules
// compare: pattern and overlay leaves and queried fields.
func comparedPaths(t *testing.T, policy string) []string {
	var out []string
	for _, doc := range decode(t, policy, mustRead(t, policy)) {
		out = append(out, variants.QueriedPaths(doc.Object)...)
		rules, _, _ := unstructured.NestedSlice(doc.Object, "spec", "rules")
		for _, r := range rules {
			rule, ok := r.(map[string]any)
			if !ok {
				continue
			}
			_, ps := variants.RuleTargets(rule)
			out = append(out, ps...)
			out = append(out, overlayPaths(rule)...)
		}
	}
	return out
}

// overlayPaths are the leaf paths of a mutate rule's patchStrategicMerge
// overlays (its conditions compare the object's values there).
func overlayPaths(rule map[string]any) []string {
	var out []string
	add := func(m map[string]any) {
		if o, ok := m["patchStrategicMerge"]; ok {
			_, ps := variants.PatternTargets(o)
			out = append(out, ps...)
		}
	}
	mutate, _ := rule["mutate"].(map[string]any)
	if mutate == nil {
		return nil
	}
	add(mutate)
	entries, _ := mutate["foreach"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			add(m)
		}
	}
	return out
}

// writeBatches writes objs to as few YAML files as keep each object's
// kind, namespace and name unique within its file.
func writeBatches(t *testing.T, objs []*unstructured.Unstructured) []string {
	var batches [][]string
	var keys []map[string]bool
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		data, err := yaml.Marshal(o.Object)
		require.NoError(t, err)
		i := 0
		for i < len(batches) && keys[i][key] {
			i++
		}
		if i == len(batches) {
			batches, keys = append(batches, nil), append(keys, map[string]bool{})
		}
		batches[i], keys[i][key] = append(batches[i], string(data)), true
	}
	dir := t.TempDir()
	var files []string
	for i, b := range batches {
		f := filepath.Join(dir, "type-variants-"+string(rune('a'+i))+".yaml")
		require.NoError(t, os.WriteFile(f, []byte(strings.Join(b, "---\n")), 0o644))
		files = append(files, f)
	}
	return files
}
