//go:build kyverno

package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/variants"
	"github.com/admitc/admitc/ir"
)

// diffFixtures are the Kyverno test files whose ClusterPolicies are compared.
var diffFixtures = []string{
	"../../examples/kyverno/*/.kyverno-test/kyverno-test.yaml",
	"../../examples/kyverno-pattern/*/.kyverno-test/kyverno-test.yaml",
	"../cli/testdata/verify/*/kyverno-test.yaml",
	"../cli/testdata/verify/*/*/.kyverno-test/kyverno-test.yaml",
	"../cli/testdata/verify/*/*/kyverno-test.yaml",
	"testdata/*/kyverno-test.yaml",
	"testdata/*/.kyverno-test/kyverno-test.yaml",
}

// failedAtPath is in the message of a pattern rule that failed, before
// its failure path: the whole-rule differential compares those messages.
const failedAtPath = " failed at path "

// TestWholeRulesAgreeWithKyvernosEngine is the whole-rule proof of the
// Kyverno frontend: for every ClusterPolicy of every fixture, on every
// resource of its Kyverno test and on seeded variants of each (package
// variants, aimed at the policy's literals and pattern paths), Kyverno's
// engine on the original policy and admitc's runtime on its translation
// (as admitc verify reads it) give every rule the same response (pass,
// fail, skip, error, or none when the rule does not match) and take the
// same admission decision; where both fail a pattern rule, its message
// with its failure path is Kyverno's. Rules admitc refuses are counted by reason,
// not compared; rules with paramKind are left out (Kyverno's engine reads
// parameter objects from the cluster and has none offline, so its answer
// is not the one admission gets). Variants the API server would refuse
// before admission (a field of the wrong type) are compared all the same:
// nothing is left out for being unrealistic. DIFF_VARIANTS and DIFF_SEED
// change the number of variants per resource and the seed; DIFF_MESSAGES
// compares every failed rule's message (those of rules Kyverno fails on an
// object the API server would refuse differ: an error's text).
func TestWholeRulesAgreeWithKyvernosEngine(t *testing.T) {
	files := diffFixtureFiles(t)
	cfg := fromEnv(diffConfig{engine: newKyvernoEngine(), count: 60, seed: 1})
	st := newDiffStats()
	for _, file := range files {
		name := strings.TrimLeft(strings.TrimSuffix(file, "/kyverno-test.yaml"), "./")
		t.Run(name, func(t *testing.T) {
			before := len(st.reports)
			diffFixture(t, cfg, file, st)
			for _, r := range st.reports[before:] {
				t.Error(r)
			}
		})
	}
	t.Logf("%s; %d messages compared", st.summary(), st.messages)
	assert.GreaterOrEqual(t, st.policies, 30)
	assert.Greater(t, st.messages, cfg.count*st.resources/5, "the failure paths of pattern rules are compared")
	assert.GreaterOrEqual(t, st.variants, cfg.count*5/6*st.resources, "most resources have DIFF_VARIANTS variants")
	assert.Zero(t, st.disagreements)
}

// TestDenyMessagesAgreeWithKyvernosEngine compares the messages too, on
// the deny rules whose conditions carry messages (Kyverno's getDenyMessage
// joins the held conditions' messages into the rule's): on every resource
// and variant where both engines fail a rule, the messages are the same.
func TestDenyMessagesAgreeWithKyvernosEngine(t *testing.T) {
	cfg := diffConfig{engine: newKyvernoEngine(), count: 60, seed: 1, messages: true}
	st := newDiffStats()
	diffFixture(t, cfg, "testdata/condition-messages/kyverno-test.yaml", st)
	for _, r := range st.reports {
		t.Error(r)
	}
	t.Log(st.summary(), "; ", st.messages, "messages compared")
	assert.Zero(t, total(st.refused))
	assert.Greater(t, st.messages, 100)
	assert.Zero(t, st.disagreements)
}

// The harness reports a planted difference: Kyverno's engine runs
// disallow-latest-tag with ':1.2.3' forbidden instead of ':latest', which
// admitc's translation of the fixture does not know.
func TestWholeRuleHarnessReportsAPlantedDifference(t *testing.T) {
	cfg := diffConfig{engine: newKyvernoEngine(), count: 10, seed: 1, plant: func(p *kyvernov1.ClusterPolicy) {
		data, err := json.Marshal(p.Spec.Rules[1].Validation.RawPattern)
		require.NoError(t, err)
		require.Contains(t, string(data), "!*:latest")
		require.NoError(t, json.Unmarshal([]byte(strings.Replace(string(data), "!*:latest", "!*:1.2.3", 1)), &p.Spec.Rules[1].Validation.RawPattern))
	}}
	st := newDiffStats()
	diffFixture(t, cfg, "../../examples/kyverno-pattern/disallow-latest-tag/.kyverno-test/kyverno-test.yaml", st)
	require.NotEmpty(t, st.reports)
	assert.Greater(t, st.disagreed["disallow-latest-tag rule validate-image-tag"], 10)
	assert.Greater(t, st.disagreed["disallow-latest-tag decision"], 10)
	assert.Zero(t, st.disagreed["disallow-latest-tag rule require-image-tag"])
	assert.Contains(t, st.reports[0], `policy disallow-latest-tag, CREATE, rule validate-image-tag, variant "original":`+"\n  kyverno: fail: validation error: Using a mutable image tag")
	assert.Contains(t, st.reports[0], "\n  admitc:  pass: \n  object: {\"apiVersion\":\"v1\",\"kind\":\"Pod\"")
}

// The harness compares a failed pattern rule's message: Kyverno's engine
// runs disallow-latest-tag with another message on its first rule, which
// decides as before.
func TestWholeRuleHarnessReportsAPlantedMessageDifference(t *testing.T) {
	cfg := diffConfig{engine: newKyvernoEngine(), count: 10, seed: 1, plant: func(p *kyvernov1.ClusterPolicy) {
		require.Equal(t, "An image tag is required.", p.Spec.Rules[0].Validation.Message)
		p.Spec.Rules[0].Validation.Message = "An image tag is needed."
	}}
	st := newDiffStats()
	diffFixture(t, cfg, "../../examples/kyverno-pattern/disallow-latest-tag/.kyverno-test/kyverno-test.yaml", st)
	require.NotEmpty(t, st.reports)
	assert.Greater(t, st.disagreed["disallow-latest-tag message of rule require-image-tag"], 5)
	assert.Zero(t, st.disagreed["disallow-latest-tag rule require-image-tag"], "the outcomes agree")
	assert.Zero(t, st.disagreed["disallow-latest-tag message of rule validate-image-tag"])
	assert.Contains(t, st.reports[0], "message of rule require-image-tag")
	assert.Contains(t, st.reports[0], "kyverno: fail: validation error: An image tag is needed. rule require-image-tag failed at path /spec/containers/")
}

// The harness sees inside foreach rules: Kyverno's engine runs
// disallow-latest-tag-foreach with ':1.25' denied instead of ':latest'.
func TestWholeRuleHarnessReportsAPlantedForEachDifference(t *testing.T) {
	cfg := diffConfig{engine: newKyvernoEngine(), count: 10, seed: 1, plant: func(p *kyvernov1.ClusterPolicy) {
		fe := &p.Spec.Rules[1].Validation.ForEachValidation[0]
		data, err := json.Marshal(fe.Deny.RawAnyAllConditions)
		require.NoError(t, err)
		require.Contains(t, string(data), "*:latest")
		require.NoError(t, json.Unmarshal([]byte(strings.Replace(string(data), "*:latest", "*:1.25", 1)), &fe.Deny.RawAnyAllConditions))
	}}
	st := newDiffStats()
	diffFixture(t, cfg, "../../examples/kyverno-pattern/disallow-latest-tag-foreach/.kyverno-test/kyverno-test.yaml", st)
	require.NotEmpty(t, st.reports)
	assert.Greater(t, st.disagreed["disallow-latest-tag-foreach rule validate-image-tag"], 10)
	assert.Zero(t, st.disagreed["disallow-latest-tag-foreach rule require-image-tag"])
	assert.Contains(t, st.reports[0], "policy disallow-latest-tag-foreach, CREATE, rule validate-image-tag, variant \"original\":")
}

func diffFixtureFiles(t *testing.T) []string {
	var out []string
	for _, g := range diffFixtures {
		m, err := filepath.Glob(g)
		require.NoError(t, err)
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

type diffConfig struct {
	engine *kyvernoEngine
	count  int
	seed   int64
	// plant, when set, changes the policy Kyverno's engine runs (and not
	// admitc's translation): the harness's own test.
	plant func(*kyvernov1.ClusterPolicy)
	// messages says the messages of rules that both engines fail are
	// compared too.
	messages bool
}

// fromEnv is cfg with DIFF_VARIANTS variants per resource and seed
// DIFF_SEED where they are set (make kyverno, make kyverno-full).
func fromEnv(cfg diffConfig) diffConfig {
	if n, err := strconv.Atoi(os.Getenv("DIFF_VARIANTS")); err == nil {
		cfg.count = n
	}
	if n, err := strconv.ParseInt(os.Getenv("DIFF_SEED"), 10, 64); err == nil {
		cfg.seed = n
	}
	if os.Getenv("DIFF_MESSAGES") != "" {
		cfg.messages = true
	}
	return cfg
}

// diffStats are the figures of the run.
type diffStats struct {
	fixtures, policies, translated, resources, variants, comparisons, decisions, denied, disagreements int
	// messages counts the failure messages compared (diffConfig.messages).
	messages                   int
	refused, leftOut, statuses map[string]int
	// disagreed counts the disagreements per policy and what differed.
	disagreed map[string]int
	// known counts, per policy and rule, the documented known difference
	// of deny rules (docs/kyverno-pattern-translation.md): a map or list
	// where a {{ }} reference is written as text, which Kyverno writes with
	// Go's fmt (or JSON) and admitc answers with an evaluation error (so the
	// failurePolicy decides), and a decision that differs by it alone.
	// Only wrong-typed variants reach it.
	known   map[string]int
	reports []string
}

func newDiffStats() *diffStats {
	return &diffStats{refused: map[string]int{}, leftOut: map[string]int{}, statuses: map[string]int{}, disagreed: map[string]int{}, known: map[string]int{}}
}

func (st *diffStats) summary() string {
	return fmt.Sprintf("%d fixtures, %d ClusterPolicies, %d rules translated, %d refused (%s), %d left out (%s), %d resources, %d variants, "+
		"%d rule comparisons (Kyverno: %s), %d decisions (%d denied by Kyverno), %d disagreements (%s), %d known differences (%s)",
		st.fixtures, st.policies, st.translated, total(st.refused), counts(st.refused), total(st.leftOut), counts(st.leftOut),
		st.resources, st.variants, st.comparisons, counts(st.statuses), st.decisions, st.denied, st.disagreements, counts(st.disagreed),
		total(st.known), counts(st.known))
}

// isKnownDifference says whether admitc's answer is the known difference:
// an evaluation error where Kyverno writes a map or list as Go's fmt text,
// or a map as JSON text (a {{ }} variable inside text), or reads a pattern
// value substituted at admission as more than plain text.
func isKnownDifference(admitc string) bool {
	return strings.HasPrefix(admitc, "error: ") && (strings.Contains(admitc, "admitc does not write a map or list as Go's fmt text") ||
		strings.Contains(admitc, "admitc does not write this value as JSON text in CEL") ||
		strings.Contains(admitc, pattern.NotReadAtAdmission))
}

// disagree records a disagreement; the first three per policy and what
// differed are kept in full.
func (st *diffStats) disagree(policy, op, what string, v variants.Variant, kyverno, admitc string) {
	if isKnownDifference(admitc) {
		st.known[policy+" "+what]++
		return
	}
	st.disagreements++
	key := policy + " " + what
	if st.disagreed[key]++; st.disagreed[key] <= 3 {
		doc, _ := json.Marshal(v.Object)
		st.reports = append(st.reports, fmt.Sprintf("policy %s, %s, %s, variant %q:\n  kyverno: %s\n  admitc:  %s\n  object: %s",
			policy, op, what, v.Name, kyverno, admitc, doc))
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func counts(m map[string]int) string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// diffPolicy is one ClusterPolicy and what is compared of it.
type diffPolicy struct {
	policy *kyvernov1.ClusterPolicy
	// kyverno is the policy Kyverno's engine runs: without the rules left
	// out (nil when none is left).
	kyverno *kyvernov1.ClusterPolicy
	// rules are the IR policies of each rule name (autogen rules
	// included); excluded the rule names left out, with the reason.
	rules    map[string][]*ir.Policy
	excluded map[string]string
	scalars  []any
	paths    []string
	// podSecurity says a rule is validate.podSecurity: Kyverno's handler
	// decodes the object into its Go type before any check.
	podSecurity bool
}

func diffFixture(t *testing.T, cfg diffConfig, file string, st *diffStats) {
	kt, err := ReadKyvernoTest(file)
	require.NoError(t, err)
	if why := unsupportedTest(kt); why != "" {
		t.Skip(why)
	}
	s, err := loadSuite(filepath.Dir(file), kt)
	require.NoError(t, err)
	pols, err := s.readClusterPolicies(kt.Policies)
	require.NoError(t, err)
	if len(pols) == 0 {
		t.Skip("no ClusterPolicy")
	}
	st.fixtures++
	if s.values != nil && readsAPI(pols) {
		cfg.engine = newKyvernoEngineWithValues(s)
	}
	var dps []diffPolicy
	for _, p := range pols {
		dp := s.diffPolicy(p, st)
		if cfg.plant != nil && dp.kyverno != nil {
			cfg.plant(dp.kyverno)
		}
		t.Logf("%s: rules %v, left out %v", p.Name, sortedRules(dp.rules), dp.excluded)
		dps = append(dps, dp)
	}
	for _, o := range s.resources {
		st.resources++
		vs := s.variantsOf(t, cfg, file, o, dps)
		st.variants += len(vs)
		for _, op := range s.operationsOf(kt, o) {
			for _, v := range vs {
				s.compareOne(t, cfg, st, dps, v, op)
			}
		}
	}
}

// diffPolicy sorts p's rules into compared and refused (by the compiler)
// or left out (rules with paramKind: Kyverno's engine reads parameter
// objects from the cluster, which it does not have offline, so its answer
// is not the one admission would get).
func (s *kyvernoSuite) diffPolicy(p *kyvernov1.ClusterPolicy, st *diffStats) diffPolicy {
	st.policies++
	dp := diffPolicy{policy: p, rules: map[string][]*ir.Policy{}, excluded: map[string]string{}}
	for i := range s.set.Policies {
		q := &s.set.Policies[i]
		if q.From != nil && q.From.Kind == "ClusterPolicy" && q.From.Name == p.Name && q.Kind == ir.Validating {
			dp.rules[q.From.Rule] = append(dp.rules[q.From.Rule], q)
			if q.ParamKind != nil {
				dp.excluded[q.From.Rule] = "paramKind"
			}
		}
	}
	for _, sk := range s.set.Skipped {
		if sk.From.Kind == "ClusterPolicy" && sk.From.Name == p.Name {
			for _, r := range []string{sk.From.Rule, "autogen-" + sk.From.Rule, "autogen-cronjob-" + sk.From.Rule} {
				dp.excluded[r] = "refused: " + sk.Feature
			}
			if !strings.HasPrefix(sk.From.Rule, "autogen-") {
				st.refused[sk.Feature]++
			}
		}
	}
	for _, r := range p.Spec.Rules {
		if _, refused := dp.excluded[r.Name]; !refused || dp.excluded[r.Name] == "paramKind" {
			st.translated++
		}
		if dp.excluded[r.Name] == "paramKind" {
			st.leftOut["paramKind (Kyverno's engine has no parameter objects offline)"]++
		}
	}
	dp.kyverno = p.DeepCopy()
	dp.kyverno.Spec.Rules = nil
	for _, r := range p.Spec.Rules {
		if dp.excluded[r.Name] != "paramKind" {
			dp.kyverno.Spec.Rules = append(dp.kyverno.Spec.Rules, r)
		}
	}
	if len(dp.kyverno.Spec.Rules) == 0 {
		dp.kyverno = nil
	}
	dp.scalars, dp.paths = policyTargets(p)
	for _, r := range p.Spec.Rules {
		dp.podSecurity = dp.podSecurity || r.Validation != nil && r.Validation.PodSecurity != nil
	}
	return dp
}

// variantsOf is the resource itself and its variants, seeded by the
// fixture and the resource.
func (s *kyvernoSuite) variantsOf(t *testing.T, cfg diffConfig, file string, o *unstructured.Unstructured, dps []diffPolicy) []variants.Variant {
	h := fnv.New64a()
	fmt.Fprint(h, file, resourceKey(o))
	opts := variants.Options{Seed: cfg.seed + int64(h.Sum64()>>1), Count: cfg.count}
	for _, dp := range dps {
		opts.Scalars = append(opts.Scalars, dp.scalars...)
		opts.Paths = append(opts.Paths, dp.paths...)
		opts.PodSecurity = opts.PodSecurity || dp.podSecurity
	}
	vs, err := variants.Generate(o.Object, opts)
	require.NoError(t, err)
	return append([]variants.Variant{{Name: "original", Object: o.Object}}, vs...)
}

// operationsOf are the operations the test judges o under (CREATE when
// no result names it).
func (s *kyvernoSuite) operationsOf(kt *kyvernoTest, o *unstructured.Unstructured) []ir.Operation {
	seen := map[ir.Operation]bool{}
	var out []ir.Operation
	for _, res := range kt.Results {
		objs, _ := s.selectResources(res.Resources)
		for _, r := range objs {
			name := res.Policy[strings.LastIndex(res.Policy, "/")+1:]
			if op := s.operation(res, name, o, true); r == o && !seen[op] {
				seen[op] = true
				out = append(out, op)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, ir.Create)
	}
	return out
}

// compareOne compares both engines on one object under one operation.
func (s *kyvernoSuite) compareOne(t *testing.T, cfg diffConfig, st *diffStats, dps []diffPolicy, v variants.Variant, op ir.Operation) {
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: v.Object}
	s.runs = map[string]*evaluationRun{}
	run, err := s.run(ctx, obj.DeepCopy(), op)
	require.NoError(t, err)
	for _, dp := range dps {
		if dp.kyverno == nil {
			continue
		}
		ans, err := cfg.engine.validate(ctx, s, dp.kyverno, obj, op)
		require.NoError(t, err)
		report := func(what, kyverno, admitc string) {
			st.disagree(dp.policy.Name, string(op), what, v, kyverno, admitc)
		}
		undecodable := dp.podSecurity && !decodesAsKyvernoReadsPods(v.Object)
		if ans.panicked != "" {
			report("engine", "panic: "+ans.panicked, "-")
			continue
		}
		compared := map[string]bool{}
		// onlyKnown: the rules that differ differ by the known difference
		// alone, so the decision may differ by it too.
		differs, onlyKnown := false, true
		for _, rule := range ruleNames(ans, dp) {
			compared[rule] = true
			k, a := ans.rules[rule], s.admitcStatus(run, dp.rules[rule])
			st.comparisons++
			st.statuses[orNone(k)]++
			if orNone(k) != orNone(a.status) && undecodable && k == statusError {
				// The documented known difference of podSecurity rules.
				st.known[dp.policy.Name+" rule "+rule+" (object does not decode)"]++
				differs = true
			} else if orNone(k) != orNone(a.status) {
				differs = true
				onlyKnown = onlyKnown && isKnownDifference(orNone(a.status)+": "+a.message)
				report("rule "+rule, orNone(k)+": "+ans.messages[rule], orNone(a.status)+": "+a.message)
			} else if k == "fail" && (cfg.messages || strings.Contains(ans.messages[rule], failedAtPath)) {
				st.messages++
				if ans.messages[rule] != a.message {
					report("message of rule "+rule, k+": "+ans.messages[rule], a.status+": "+a.message)
				}
			}
		}
		st.decisions++
		kBlocks, aDenies := ans.blocks(dp.policy, compared), s.admitcDenies(run, dp)
		if kBlocks {
			st.denied++
		}
		if kBlocks != aDenies {
			if differs && onlyKnown {
				st.known[dp.policy.Name+" decision"]++
			} else {
				report("decision", decision(kBlocks), decision(aDenies))
			}
		}
	}
}

// ruleNames are the rules either engine answered for, less the excluded.
func ruleNames(ans kyvernoAnswer, dp diffPolicy) []string {
	names := map[string]bool{}
	for r := range ans.rules {
		names[r] = true
	}
	for r := range dp.rules {
		names[r] = true
	}
	for r := range dp.excluded {
		delete(names, r)
	}
	return sortedNames(names)
}

// admitcStatus is the rule's response from admitc's runtime as admitc
// verify reads it: the first IR policy of the rule that responded.
func (s *kyvernoSuite) admitcStatus(run *evaluationRun, family []*ir.Policy) ruleResponse {
	for _, p := range family {
		if rr, matched := s.response(run, p); matched {
			return rr
		}
	}
	return ruleResponse{}
}

// admitcDenies says whether one of the policy's compared rules denied.
func (s *kyvernoSuite) admitcDenies(run *evaluationRun, dp diffPolicy) bool {
	for rule, family := range dp.rules {
		if _, excluded := dp.excluded[rule]; excluded {
			continue
		}
		for _, p := range family {
			for _, v := range run.validated.Violations {
				if v.Policy != p.Name {
					continue
				}
				for _, a := range v.Actions {
					if a == ir.Deny {
						return true
					}
				}
			}
		}
	}
	return false
}

func sortedRules(m map[string][]*ir.Policy) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func orNone(status string) string {
	if status == "" {
		return "none"
	}
	return status
}

func decision(deny bool) string {
	if deny {
		return "denied"
	}
	return "allowed"
}

// decodesAsKyvernoReadsPods says whether obj decodes into the Go type
// Kyverno's podSecurity handler unmarshals it into (getSpec: a Deployment
// for every controller with spec.template, a CronJob, a Pod). When it does
// not, Kyverno answers the rule with an error before any check, and
// admitc judges the fields the checks read: the known difference of
// podSecurity rules (docs/kyverno-podsecurity.md). The API server never
// admits such an object.
func decodesAsKyvernoReadsPods(obj map[string]any) bool {
	data, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	var into any
	switch obj["kind"] {
	case "Pod":
		into = &corev1.Pod{}
	case "CronJob":
		into = &batchv1.CronJob{}
	case "DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController":
		into = &appsv1.Deployment{}
	default:
		return true
	}
	return json.Unmarshal(data, into) == nil
}

// readsAPI says whether a rule of pols has an apiCall context entry.
func readsAPI(pols []*kyvernov1.ClusterPolicy) bool {
	for _, p := range pols {
		for _, r := range p.Spec.Rules {
			for _, e := range r.Context {
				if e.APICall != nil {
					return true
				}
			}
		}
	}
	return false
}
