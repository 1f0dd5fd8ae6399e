//go:build kyverno

package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/kyverno/kyverno/pkg/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/internal/variants"
	"github.com/admitc/admitc/ir"
)

// mutateFixtures are the Kyverno test files whose ClusterPolicy mutate
// rules are compared.
var mutateFixtures = []string{
	"../../examples/kyverno-mutate/*/.kyverno-test/kyverno-test.yaml",
	"testdata/mutate-*/.kyverno-test/kyverno-test.yaml",
}

// TestMutateRulesAgreeWithKyvernosEngine is the proof of the mutate rule
// translation: for every ClusterPolicy of every mutate fixture, on every
// resource of its Kyverno test and on seeded variants of each (aimed at
// the overlay's paths and literals), Kyverno's engine (Mutate) on the
// original policy and admitc's runtime on its translation give every rule
// the same response (pass, skip, error, or none when the rule does not
// match) and, when no rule fails, the same patched object. DIFF_VARIANTS
// and DIFF_SEED change the number of variants per resource and the seed.
func TestMutateRulesAgreeWithKyvernosEngine(t *testing.T) {
	var files []string
	for _, g := range mutateFixtures {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		files = append(files, m...)
	}
	cfg := fromEnv(diffConfig{engine: newKyvernoEngine(), count: 60, seed: 1})
	st := newDiffStats()
	for _, file := range files {
		t.Run(strings.TrimPrefix(file, "../../"), func(t *testing.T) {
			before := len(st.reports)
			mutateFixture(t, cfg, file, st)
			for _, r := range st.reports[before:] {
				t.Error(r)
			}
		})
	}
	t.Logf("%d fixtures, %d ClusterPolicies, %d rules translated, %d refused (%s), %d resources, %d variants, "+
		"%d rule comparisons (Kyverno: %s), %d patched objects compared, %d disagreements (%s), %d known differences (%s)",
		st.fixtures, st.policies, st.translated, total(st.refused), counts(st.refused), st.resources, st.variants,
		st.comparisons, counts(st.statuses), st.decisions, st.disagreements, counts(st.disagreed), total(st.known), counts(st.known))
	assert.GreaterOrEqual(t, st.fixtures, 6)
	assert.GreaterOrEqual(t, st.variants, cfg.count*5/6*st.resources, "most resources have DIFF_VARIANTS variants")
	assert.Zero(t, st.disagreements)
	assert.Greater(t, st.statuses["pass"], 0)
	assert.Greater(t, st.statuses["skip"], 0)
}

// The harness reports a planted difference: Kyverno's engine runs
// always-pull-images with IfNotPresent instead of Always.
func TestMutateHarnessReportsAPlantedDifference(t *testing.T) {
	cfg := diffConfig{engine: newKyvernoEngine(), count: 10, seed: 1, plant: func(p *kyvernov1.ClusterPolicy) {
		m := p.Spec.Rules[0].Mutation
		data, err := json.Marshal(m.GetPatchStrategicMerge())
		require.NoError(t, err)
		var planted any
		require.NoError(t, json.Unmarshal([]byte(strings.Replace(string(data), `"Always"`, `"IfNotPresent"`, 1)), &planted))
		m.SetPatchStrategicMerge(planted)
	}}
	st := newDiffStats()
	mutateFixture(t, cfg, "../../examples/kyverno-mutate/always-pull-images/.kyverno-test/kyverno-test.yaml", st)
	require.NotEmpty(t, st.reports)
	assert.Greater(t, st.disagreed["always-pull-images patched object"], 5)
	assert.Contains(t, st.reports[0], `policy always-pull-images, CREATE, patched object, variant "original":`)
}

// The images fixture (Kyverno's images variable and nested variables in a
// mutate foreach) agrees with Kyverno's engine on its resources and 8
// variants each: its translation takes about 10 s to compile, and some of
// the 60 variants the other fixtures get run for minutes (not yet
// explained), so it is kept out of the main test's fixtures.
func TestMutateImagesFixtureAgreesWithKyvernosEngine(t *testing.T) {
	cfg := diffConfig{engine: newKyvernoEngine(), count: 8, seed: 1}
	st := newDiffStats()
	mutateFixture(t, cfg, "testdata/mirror-docker-hub-images/.kyverno-test/kyverno-test.yaml", st)
	for _, r := range st.reports {
		t.Error(r)
	}
	t.Logf("%d resources, %d variants, %d rule comparisons (Kyverno: %s), %d patched objects compared, %d known differences (%s)",
		st.resources, st.variants, st.comparisons, counts(st.statuses), st.decisions, total(st.known), counts(st.known))
	assert.Zero(t, st.disagreements)
	assert.Greater(t, st.statuses["pass"], 0)
	assert.Greater(t, st.statuses["skip"], 0)
}

func mutateFixture(t *testing.T, cfg diffConfig, file string, st *diffStats) {
	kt, err := ReadKyvernoTest(file)
	require.NoError(t, err)
	s, err := loadSuite(filepath.Dir(file), kt)
	require.NoError(t, err)
	pols, err := s.readClusterPolicies(kt.Policies)
	require.NoError(t, err)
	require.NotEmpty(t, pols)
	st.fixtures++
	var dps []diffPolicy
	for _, p := range pols {
		dp := s.mutatePolicy(p, st)
		if cfg.plant != nil {
			cfg.plant(dp.kyverno)
		}
		t.Logf("%s: rules %v, refused %v", p.Name, sortedRules(dp.rules), dp.excluded)
		dps = append(dps, dp)
	}
	for _, o := range s.resources {
		st.resources++
		vs := s.variantsOf(t, cfg, file, o, dps)
		st.variants += len(vs)
		for _, v := range vs {
			for _, op := range []ir.Operation{ir.Create, ir.Update} {
				s.compareMutation(t, cfg, st, dps, v, op)
			}
		}
	}
}

// mutatePolicy sorts p's mutate rules into compared and refused, with
// the variants' targets: the policy's literals and the overlay's paths.
func (s *kyvernoSuite) mutatePolicy(p *kyvernov1.ClusterPolicy, st *diffStats) diffPolicy {
	st.policies++
	dp := diffPolicy{policy: p, rules: map[string][]*ir.Policy{}, excluded: map[string]string{}}
	for i := range s.set.Policies {
		q := &s.set.Policies[i]
		if q.From != nil && q.From.Kind == "ClusterPolicy" && q.From.Name == p.Name && q.Kind == ir.Mutating {
			dp.rules[q.From.Rule] = append(dp.rules[q.From.Rule], q)
		}
	}
	for _, sk := range s.set.Skipped {
		if sk.From.Kind == "ClusterPolicy" && sk.From.Name == p.Name {
			dp.excluded[sk.From.Rule] = "refused: " + sk.Feature
			if !strings.HasPrefix(sk.From.Rule, "autogen-") {
				st.refused[sk.Feature]++
			}
		}
	}
	for _, r := range p.Spec.Rules {
		if _, refused := dp.excluded[r.Name]; !refused {
			st.translated++
		}
	}
	dp.kyverno = p.DeepCopy()
	dp.kyverno.Spec.Rules = nil
	for _, r := range p.Spec.Rules {
		if _, refused := dp.excluded[r.Name]; !refused {
			dp.kyverno.Spec.Rules = append(dp.kyverno.Spec.Rules, r)
		}
	}
	dp.scalars, dp.paths = policyTargets(p)
	for _, r := range p.Spec.Rules {
		if m := r.Mutation; m != nil {
			if o := m.GetPatchStrategicMerge(); o != nil {
				dp.addPattern(o)
			}
			dp.paths = append(dp.paths, json6902Paths(m.PatchesJSON6902)...)
			for _, fe := range m.ForEachMutation {
				if o := fe.GetPatchStrategicMerge(); o != nil {
					dp.addPattern(o)
				}
				dp.paths = append(dp.paths, json6902Paths(fe.PatchesJSON6902)...)
			}
		}
	}
	return dp
}

// addPattern adds an overlay's scalars and leaf paths to the targets.
func (dp *diffPolicy) addPattern(o any) {
	s, ps := variants.PatternTargets(o)
	dp.scalars, dp.paths = append(dp.scalars, s...), append(dp.paths, ps...)
}

// json6902Paths are the paths of a patchesJson6902 document written as
// the variants' field paths.
func json6902Paths(doc string) []string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		_, ptr, ok := strings.Cut(line, "path:")
		if !ok {
			continue
		}
		p := ""
		for _, seg := range strings.Split(strings.Trim(strings.TrimSpace(ptr), `"'/`), "/") {
			seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
			if _, err := strconv.Atoi(seg); err == nil || seg == "-" || strings.Contains(seg, "{{") {
				p += "[*]"
				continue
			}
			p = variants.JoinKey(p, seg)
		}
		out = append(out, strings.TrimSuffix(p, "[*]"))
	}
	return out
}

// compareMutation compares both engines on one object, created or
// updated (the object its own old object, as verify's UPDATE is).
func (s *kyvernoSuite) compareMutation(t *testing.T, cfg diffConfig, st *diffStats, dps []diffPolicy, v variants.Variant, op ir.Operation) {
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: v.Object}
	s.runs = map[string]*evaluationRun{}
	run, err := s.run(ctx, obj.DeepCopy(), op)
	require.NoError(t, err)
	for _, dp := range dps {
		report := func(what, kyverno, admitc string) {
			st.disagree(dp.policy.Name, string(op), what, v, kyverno, admitc)
		}
		ans, patched := cfg.engine.mutate(ctx, s, dp.kyverno, obj, op)
		if ans.panicked != "" {
			report("engine", "panic: "+ans.panicked, "-")
			continue
		}
		if malformed := malformedPodSpecList(v.Object); malformed != "" {
			// Known difference (docs/kyverno-pattern-translation.md):
			// kustomize's merge rebuilds every PodSpec list of the object
			// by name; it fails on an element that is not a map and drops
			// or merges elements without a name or with the same name.
			report = func(what, kyverno, admitc string) { st.known[dp.policy.Name+" "+malformed]++ }
		} else if emptyMapInList(v.Object) {
			// Known difference (docs/kyverno-pattern-translation.md):
			// kustomize's merge drops the empty maps of every list of
			// the object; admitc leaves them.
			report = func(what, kyverno, admitc string) { st.known[dp.policy.Name+" empty map in a list"]++ }
		} else if substitutesObjectText(dp.policy, v.Object) {
			// Known difference (docs/kyverno-pattern-translation.md):
			// Kyverno substitutes {{ }} again in the text a variable
			// gave, so an object string holding {{ }} is evaluated.
			report = func(what, kyverno, admitc string) { st.known[dp.policy.Name+" object text holding {{ }}"]++ }
		}
		report = nullKeyKnown(report, patched, func(what string) { st.known[dp.policy.Name+" "+what]++ })
		failed := false
		for _, rule := range mutateRuleOrder(dp) {
			k, a := ans.rules[rule], s.admitcStatus(run, dp.rules[rule])
			if k == "" && a.status == "" {
				continue
			}
			st.comparisons++
			st.statuses[orNone(k)]++
			if orNone(k) != orNone(a.status) {
				report("rule "+rule, orNone(k)+": "+ans.messages[rule], orNone(a.status)+": "+a.message)
			}
			if k == "error" || a.status == "error" {
				// Kyverno's engine goes on with an empty resource after a
				// failed mutate rule, and admission fails: later rules
				// are not compared.
				failed = true
				break
			}
		}
		if failed || run.mutated == nil {
			continue
		}
		st.decisions++
		if kj, aj := normalized(patched), normalized(run.mutated.Object.Object); !reflect.DeepEqual(kj, aj) {
			kd, _ := json.Marshal(kj)
			ad, _ := json.Marshal(aj)
			report("patched object", string(kd), string(ad))
		}
	}
}

// mutateRuleOrder is the order Kyverno's engine runs the compared rules
// in (ComputeRules: the rules, then their autogen rules).
func mutateRuleOrder(dp diffPolicy) []string {
	var out []string
	for _, prefix := range []string{"", "autogen-", "autogen-cronjob-"} {
		for _, r := range dp.kyverno.Spec.Rules {
			if _, excluded := dp.excluded[prefix+r.Name]; !excluded {
				out = append(out, prefix+r.Name)
			}
		}
	}
	return out
}

// mergedLists are the lists of the fixtures' kinds that kustomize merges
// by a key (its OpenAPI schema): where they are and the key.
var mergedLists = []struct {
	at  []string
	key string
}{
	{[]string{"spec", "ports"}, "port"}, // a Service's
}

func init() {
	for _, spec := range [][]string{{"spec"}, {"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}} {
		for _, list := range []string{"containers", "initContainers", "ephemeralContainers", "volumes", "imagePullSecrets"} {
			mergedLists = append(mergedLists, struct {
				at  []string
				key string
			}{append(append([]string(nil), spec...), list), "name"})
		}
	}
}

// malformedPodSpecList names the first list of obj that kustomize merges
// by a key (PodSpec lists by name under spec, spec.template.spec or
// spec.jobTemplate.spec.template.spec, a Service's ports by port) with an
// element that is not a map, has no key, or repeats one: "" when there
// is none. The API server rejects such objects (decoding or validation),
// and kustomize's merge in Kyverno rewrites them.
func malformedPodSpecList(obj map[string]any) string {
	if at := repeatedContainerPort(obj); at != "" {
		return "malformed ports in " + at
	}
	for _, l := range mergedLists {
		v, ok, _ := unstructured.NestedFieldNoCopy(obj, l.at...)
		items, isList := v.([]any)
		if !ok || !isList || obj["kind"] != "Service" && l.key == "port" {
			continue
		}
		seen := map[string]bool{}
		for _, it := range items {
			e, isMap := it.(map[string]any)
			key, has := e[l.key]
			k := fmt.Sprint(key)
			_, str := key.(string)
			_, isMapKey := key.(map[string]any)
			_, isListKey := key.([]any)
			if !isMap || !has || key == nil || isMapKey || isListKey || (str && k == "") || (l.key == "name" && !str) || seen[k] {
				return "malformed " + strings.Join(l.at, ".")
			}
			seen[k] = true
		}
	}
	return ""
}

// emptyMapInList says whether a list of v, at any depth, holds {}.
func emptyMapInList(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if emptyMapInList(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok && len(m) == 0 || emptyMapInList(e) {
				return true
			}
		}
	}
	return false
}

// nullKeyKnown is report, but for the known differences of a patch key
// (docs/kyverno-pattern-translation.md) that admitc fails and Kyverno
// passes with a key holding "{{" in its patched object: a key that is
// one variable resolving to null (Kyverno keeps it as written, braces and
// all) and a key holding "{{" once substituted (Kyverno renames it while
// it ranges over the map: substituted again, an error, when Go's range
// visits the renamed key, kept otherwise). known counts them instead.
func nullKeyKnown(report func(what, kyverno, admitc string), patched map[string]any, known func(what string)) func(what, kyverno, admitc string) {
	return func(what, kyverno, admitc string) {
		if !strings.HasPrefix(kyverno, "pass") || !hasBracedKey(patched) {
			report(what, kyverno, admitc)
			return
		}
		switch {
		case strings.Contains(admitc, "a key that is one variable resolves to null"):
			known("key variable resolving to null")
		case strings.Contains(admitc, "a key holds two opening braces once its variables are substituted"):
			known("key holding {{ once substituted")
		default:
			report(what, kyverno, admitc)
		}
	}
}

// hasBracedKey says whether a map in v has a key holding "{{".
func hasBracedKey(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, "{{") || hasBracedKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasBracedKey(e) {
				return true
			}
		}
	}
	return false
}

// substitutesObjectText says whether p has a foreach mutation whose patch
// substitutes {{ }} variables and obj holds {{ in its text.
func substitutesObjectText(p *kyvernov1.ClusterPolicy, obj map[string]any) bool {
	data, _ := json.Marshal(obj)
	if !strings.Contains(string(data), "{{") {
		return false
	}
	for _, r := range p.Spec.Rules {
		if r.Mutation == nil {
			continue
		}
		for _, fe := range r.Mutation.ForEachMutation {
			patch, _ := json.Marshal(fe.GetPatchStrategicMerge())
			if strings.Contains(string(patch), "{{") {
				return true
			}
		}
	}
	return false
}

// repeatedContainerPort names the first container list of obj where a
// container's ports hold an element without a containerPort or repeat
// one (kustomize merges them by containerPort: it drops or folds those):
// "" when there is none.
func repeatedContainerPort(obj map[string]any) string {
	for _, l := range mergedLists {
		if l.key != "name" || l.at[len(l.at)-1] == "volumes" || l.at[len(l.at)-1] == "imagePullSecrets" {
			continue
		}
		items, _, _ := unstructured.NestedSlice(obj, l.at...)
		for _, it := range items {
			c, _ := it.(map[string]any)
			ports, _ := c["ports"].([]any)
			seen := map[string]bool{}
			for _, p := range ports {
				pm, _ := p.(map[string]any)
				k := fmt.Sprint(pm["containerPort"])
				if pm["containerPort"] == nil || seen[k] {
					return strings.Join(l.at, ".")
				}
				seen[k] = true
			}
		}
	}
	return ""
}

// normalized is the object through JSON, so numbers compare by value.
func normalized(o map[string]any) any {
	data, _ := json.Marshal(o)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// mutate runs the engine's mutation of p on obj as a CREATE or an UPDATE
// (obj its own old object), as the CLI's makePolicyContext builds it.
func (k *kyvernoEngine) mutate(ctx context.Context, s *kyvernoSuite, p *kyvernov1.ClusterPolicy, obj *unstructured.Unstructured, op ir.Operation) (ans kyvernoAnswer, patched map[string]any) {
	defer func() {
		if r := recover(); r != nil {
			ans.panicked = fmt.Sprint(r)
		}
	}()
	operation := kyvernov1.Create
	if op == ir.Update {
		operation = kyvernov1.Update
	}
	pc, err := engine.NewPolicyContext(k.jp, *obj.DeepCopy(), operation, s.kyvernoUser(), k.cfg)
	if err != nil {
		return kyvernoAnswer{panicked: err.Error()}, nil
	}
	if op == ir.Update {
		pc = pc.WithOldResource(*obj.DeepCopy())
		if err := pc.JSONContext().AddOldResource(obj.DeepCopy().Object); err != nil {
			return kyvernoAnswer{panicked: err.Error()}, nil
		}
	}
	pc = pc.WithPolicy(p).WithNamespaceLabels(s.namespaceLabels(obj.GetNamespace())).WithResourceKind(obj.GroupVersionKind(), "")
	resp := k.eng.Mutate(ctx, pc)
	ans = kyvernoAnswer{rules: map[string]string{}, messages: map[string]string{}, response: resp}
	for _, r := range resp.PolicyResponse.Rules {
		ans.rules[r.Name()], ans.messages[r.Name()] = string(r.Status()), r.Message()
	}
	return ans, resp.PatchedResource.Object
}
