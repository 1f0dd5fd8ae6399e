//go:build kyverno

package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	policiesv1beta1 "github.com/kyverno/api/api/policies.kyverno.io/v1beta1"
	"github.com/kyverno/kyverno/ext/cluster"
	celengine "github.com/kyverno/kyverno/pkg/cel/engine"
	"github.com/kyverno/kyverno/pkg/cel/libs"
	"github.com/kyverno/kyverno/pkg/cel/matching"
	vpolcompiler "github.com/kyverno/kyverno/pkg/cel/policies/vpol/compiler"
	vpolengine "github.com/kyverno/kyverno/pkg/cel/policies/vpol/engine"
	engineapi "github.com/kyverno/kyverno/pkg/engine/api"
	gctxstore "github.com/kyverno/kyverno/pkg/globalcontext/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/variants"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// TestValidatingPoliciesAgreeWithKyvernosEngine is the proof of admitc's
// reading of Kyverno's CEL policies: for every ValidatingPolicy of every
// fixture, on every resource of its Kyverno test and on seeded variants
// of each, Kyverno's own ValidatingPolicy engine (pkg/cel/policies/vpol,
// as kyverno test runs it: its compiler, its CEL environment and
// libraries, its autogen) and admitc's runtime on the policy as admitc
// verify reads it give every policy the same responses (pass, fail with
// its message, error, skip, or none) and take the same admission
// decision. DIFF_VARIANTS and DIFF_SEED change the number of variants per
// resource and the seed.
func TestValidatingPoliciesAgreeWithKyvernosEngine(t *testing.T) {
	cfg := fromEnv(diffConfig{count: 60, seed: 1})
	st := newDiffStats()
	for _, file := range diffFixtureFiles(t) {
		name := strings.TrimLeft(strings.TrimSuffix(file, "/kyverno-test.yaml"), "./")
		t.Run(name, func(t *testing.T) {
			before := len(st.reports)
			vpolFixture(t, cfg, file, st)
			for _, r := range st.reports[before:] {
				t.Error(r)
			}
		})
	}
	t.Logf("%d fixtures, %d ValidatingPolicies, %d resources, %d variants, %d policy comparisons (Kyverno's responses: %s), %d decisions (%d denied by Kyverno), %d disagreements",
		st.fixtures, st.policies, st.resources, st.variants, st.comparisons, counts(st.statuses), st.decisions, st.denied, st.disagreements)
	assert.GreaterOrEqual(t, st.policies, 8)
	assert.Zero(t, st.disagreements)
}

// vpolEngine is Kyverno's ValidatingPolicy engine over a fixture's
// policies, as kyverno test builds it.
type vpolEngine struct {
	eng vpolengine.Engine
	// libs is what the libraries read, as kyverno test builds it
	// (processor.NewContextProvider): in a test with clusterResources,
	// Kyverno's provider over a fake cluster of the test's objects; else
	// the fake provider of its context file and global context entries.
	libs libs.Context
}

func newVpolEngine(t *testing.T, s *kyvernoSuite, vps []policiesv1beta1.ValidatingPolicyLike) *vpolEngine {
	// Kyverno's compiler binds the libraries to the global libs.LibraryContext
	// at compile time: set it first, as kyverno test does.
	lib := kyvernoLibs(t, s)
	libs.LibraryContext = lib
	provider, err := vpolengine.NewProvider(vpolcompiler.NewCompiler(), vps, nil)
	require.NoError(t, err)
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: s.namespaceLabels(name)}}
	}
	return &vpolEngine{eng: vpolengine.NewEngine(provider, ns, matching.NewMatcher()), libs: lib}
}

// kyvernoLibs is the libraries' context kyverno test gives s's policies.
func kyvernoLibs(t *testing.T, s *kyvernoSuite) libs.Context {
	if s.library == nil {
		return libs.NewFakeContextProvider()
	}
	if !s.library.FakeContext {
		fake := cluster.NewFake()
		var objs []k8sruntime.Object
		for _, o := range s.library.Objects {
			objs = append(objs, o.DeepCopy())
		}
		client, err := fake.DClient(objs)
		require.NoError(t, err)
		ctx, err := libs.NewContextProvider(client, nil, gctxstore.New(0), fake.RESTMapper(nil), true)
		require.NoError(t, err)
		return ctx
	}
	fake := libs.NewFakeContextProvider()
	for _, o := range s.library.Objects {
		require.NoError(t, fake.AddResource(runtime.ResourceFor(o.GroupVersionKind()), o.DeepCopy()))
	}
	for name, data := range s.library.GlobalContext {
		fake.AddGlobalReference(name, data)
	}
	return fake
}

// vpolAnswer is the engine's response for one policy name (the policy and
// its autogen twins): each rule response's status and message, and
// whether the webhook blocks (a fail or error of a policy with Deny).
type vpolAnswer struct {
	statuses []string
	blocks   bool
}

// handle runs the engine on obj under op as kyverno test does
// (AdmissionRequestShape), answers by policy name.
func (v *vpolEngine) handle(ctx context.Context, s *kyvernoSuite, obj *unstructured.Unstructured, op ir.Operation) (map[string]*vpolAnswer, error) {
	operation, object, old := admissionv1.Create, k8sruntime.Object(obj.DeepCopy()), k8sruntime.Object(nil)
	switch op {
	case ir.Update:
		operation, old = admissionv1.Update, obj.DeepCopy()
	case ir.Delete:
		operation, object, old = admissionv1.Delete, nil, obj.DeepCopy()
	}
	gvk := obj.GroupVersionKind()
	var user authenticationv1.UserInfo
	if s.user != nil {
		user = authenticationv1.UserInfo{Username: s.user.GetName(), UID: s.user.GetUID(), Groups: s.user.GetGroups()}
	}
	req := celengine.Request(v.libs, gvk, runtime.ResourceFor(gvk), "", obj.GetName(), obj.GetNamespace(), operation, user, object, old, false, nil)
	resp, err := v.eng.Handle(ctx, req, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]*vpolAnswer{}
	for _, p := range resp.Policies {
		a := out[p.Policy.GetName()]
		if a == nil {
			a = &vpolAnswer{}
			out[p.Policy.GetName()] = a
		}
		for _, r := range p.Rules {
			a.statuses = append(a.statuses, vpolStatus(r))
			if p.Actions.Has(admissionregistrationv1.Deny) && (r.Status() == engineapi.RuleStatusFail || r.Status() == engineapi.RuleStatusError) {
				a.blocks = true
			}
		}
	}
	return out, nil
}

// vpolStatus is a rule response as the comparison reads it: the status,
// and the message of a failure or an error.
func vpolStatus(r engineapi.RuleResponse) string {
	switch r.Status() {
	case engineapi.RuleStatusFail, engineapi.RuleStatusError:
		return string(r.Status()) + ": " + r.Message()
	}
	return string(r.Status())
}

func vpolFixture(t *testing.T, cfg diffConfig, file string, st *diffStats) {
	kt, err := ReadKyvernoTest(file)
	require.NoError(t, err)
	if why := unsupportedTest(kt); why != "" {
		t.Skip(why)
	}
	if !mentionsValidatingPolicy(filepath.Dir(file), kt.Policies) {
		t.Skip("no ValidatingPolicy")
	}
	s, err := loadSuite(filepath.Dir(file), kt)
	require.NoError(t, err)
	vps, err := s.readValidatingPolicies(kt.Policies)
	require.NoError(t, err)
	if len(vps) == 0 {
		t.Skip("no ValidatingPolicy")
	}
	st.fixtures++
	st.policies += len(vps)
	eng := newVpolEngine(t, s, vps)
	for _, o := range s.resources {
		st.resources++
		vs := s.variantsOf(t, cfg, file, o, nil)
		st.variants += len(vs)
		for _, op := range s.operationsOf(kt, o) {
			for _, v := range vs {
				s.compareVpol(t, st, eng, vps, v, op)
			}
		}
	}
}

// compareVpol compares both engines on one object under one operation.
func (s *kyvernoSuite) compareVpol(t *testing.T, st *diffStats, eng *vpolEngine, vps []policiesv1beta1.ValidatingPolicyLike, v variants.Variant, op ir.Operation) {
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: v.Object}
	answers, err := eng.handle(ctx, s, obj, op)
	require.NoError(t, err)
	s.runs = map[string]*evaluationRun{}
	run, err := s.run(ctx, obj.DeepCopy(), op)
	require.NoError(t, err)
	for _, vp := range vps {
		name := vp.GetName()
		family, _ := s.family(name, "")
		k := answers[name]
		if k == nil {
			k = &vpolAnswer{}
		}
		a := s.admitcVpol(run, family)
		st.comparisons++
		for _, status := range k.statuses {
			st.statuses[strings.SplitN(status, ":", 2)[0]]++
		}
		if strings.Join(k.statuses, " | ") != strings.Join(a, " | ") {
			st.disagree(name, string(op), "responses", v, strings.Join(k.statuses, " | "), strings.Join(a, " | "))
		}
		st.decisions++
		if k.blocks {
			st.denied++
		}
		if denies := s.admitcDeniesFamily(run, family); denies != k.blocks {
			st.disagree(name, string(op), "decision", v, decision(k.blocks), decision(denies))
		}
	}
}

// admitcVpol are the responses of a policy's IR family as admitc verify
// reads them, in the order the status strings are compared (sorted: the
// engine answers autogen twins in the provider's order).
func (s *kyvernoSuite) admitcVpol(run *evaluationRun, family []*ir.Policy) []string {
	var out []string
	for _, p := range family {
		rr, matched := s.response(run, p)
		if !matched {
			continue
		}
		status := rr.status
		if rr.status == statusFail || rr.status == statusError {
			status += ": " + rr.message
		}
		if rr.status == statusSkip {
			status = statusSkip
		}
		out = append(out, status)
	}
	sort.Strings(out)
	return out
}

// admitcDeniesFamily says whether a policy of the family denied.
func (s *kyvernoSuite) admitcDeniesFamily(run *evaluationRun, family []*ir.Policy) bool {
	for _, p := range family {
		for _, v := range run.validated.Violations {
			if v.Policy == p.Name && containsAction(v.Actions, ir.Deny) {
				return true
			}
		}
	}
	return false
}

func containsAction(as []ir.Action, a ir.Action) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}

// readValidatingPolicies reads the ValidatingPolicies of the test's
// policy files (any served version: they share one spec).
func (s *kyvernoSuite) readValidatingPolicies(files []string) ([]policiesv1beta1.ValidatingPolicyLike, error) {
	var paths []string
	for _, f := range files {
		paths = append(paths, s.path(f))
	}
	ms, err := runtime.ReadManifests(paths)
	if err != nil {
		return nil, err
	}
	var out []policiesv1beta1.ValidatingPolicyLike
	for _, m := range ms {
		if m.Object.GetKind() != "ValidatingPolicy" || !strings.HasPrefix(m.Object.GetAPIVersion(), "policies.kyverno.io/") {
			continue
		}
		data, err := m.Object.MarshalJSON()
		if err != nil {
			return nil, err
		}
		p := &policiesv1beta1.ValidatingPolicy{}
		if err := yaml.UnmarshalStrict(data, p); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Source, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// mentionsValidatingPolicy says whether a test's policy files may hold a
// ValidatingPolicy, without compiling them (most fixtures hold none).
func mentionsValidatingPolicy(dir string, files []string) bool {
	for _, f := range files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		data, err := os.ReadFile(f)
		if err != nil || strings.Contains(string(data), "ValidatingPolicy") {
			return true
		}
	}
	return false
}
