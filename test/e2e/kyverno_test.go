//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kyvernoOffline is one object of `admitc test -o json`, with its key.
type kyvernoOffline struct {
	offline
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
}

// apiServerFixtures are the fixtures of internal/verify/testdata that the
// e2e comparison runs as well.
var apiServerFixtures = []string{"jmespath-functions", "nested-variables-in-strings"}

// TestKyvernoPoliciesAsVAPs compiles every Kyverno fixture (ClusterPolicy
// with validate.cel, pattern, deny, foreach or mutate rules, Policy,
// ValidatingPolicy, MutatingPolicy) with --backend vap,map, applies
// the output to the API server, and checks that every resource of the
// fixture's Kyverno test is decided as `admitc test` decides it on the
// original policy: verdict, message and mutation. Namespaces are created
// as the resources name them, and admitc test reads the labels the API
// server gave them.
//
// Each fixture is also decided on a few type variants of its resources
// (typeVariants: a map, a list, a string, a number or null where the
// policy compares a value): kube-apiserver 1.37 evaluates a built-in
// object as typed values, on which a comparison with a value of another
// kind can raise an error where admitc's 1.36 library answers false.
//
// A fixture whose policies admitc refuses to write for the API server
// (exit 2, refusedForAPIServer) is skipped with the refusal logged.
func TestKyvernoPoliciesAsVAPs(t *testing.T) {
	policies, err := filepath.Glob(repo + "examples/kyverno/*/policy.yaml")
	require.NoError(t, err)
	patterns, err := filepath.Glob(repo + "examples/kyverno-pattern/*/policy.yaml")
	require.NoError(t, err)
	mutates, err := filepath.Glob(repo + "examples/kyverno-mutate/*/policy.yaml")
	require.NoError(t, err)
	// Differential fixtures written for the API server too. The others
	// test Kyverno's semantics on objects the API server refuses or
	// changes (a ConfigMap's data patched to a map, a Pod naming a service
	// account that does not exist), so they stay with Kyverno's engine.
	for _, name := range apiServerFixtures {
		policies = append(policies, repo+"internal/verify/testdata/"+name+"/policy.yaml")
	}
	policies = append(append(policies, patterns...), mutates...)
	require.NotEmpty(t, policies)
	var base, typed tally
	fixtures, skipped := 0, 0
	for _, abs := range policies {
		policy := strings.TrimPrefix(abs, repo)
		dir := filepath.Dir(policy)
		resources := dir + "/.kyverno-test/resources.yaml"
		if _, err := os.Stat(repo + resources); err != nil {
			continue
		}
		// The fixture's test, and each test of a directory under it with
		// resources or cluster resources of its own (ConfigMaps that
		// differ, or none), on its resources or else the fixture's.
		subs, err := filepath.Glob(repo + dir + "/*/.kyverno-test")
		require.NoError(t, err)
		tests := [][2]string{{filepath.Base(dir), dir + "/.kyverno-test"}}
		for _, sub := range subs {
			sub = strings.TrimPrefix(sub, repo)
			tests = append(tests, [2]string{filepath.Base(dir) + "/" + filepath.Base(filepath.Dir(sub)), sub})
		}
		for _, test := range tests {
			name, testDir := test[0], test[1]
			resources := resources
			if _, err := os.Stat(repo + testDir + "/resources.yaml"); err == nil {
				resources = testDir + "/resources.yaml"
			} else if _, err := os.Stat(repo + testDir + "/cluster.yaml"); err != nil {
				continue
			}
			t.Run(name, func(t *testing.T) {
				fixtures++
				stream, stderr, code := admitc(t, "compile", "--backend", "vap,map", "--policies", policy)
				if refusedForAPIServer(code, stderr) {
					skipped++
					t.Skipf("%s: admitc refuses to write it for the API server (the webhook backend runs it):\n%s", policy, stderr)
				}
				require.Equal(t, 0, code, stderr)
				params := clusterConfigMaps(t, testDir+"/cluster.yaml")
				vs, refused := typeVariants(t, policy, resources)
				typed.refused += refused
				b, v := decideAsAdmitcTestWith(t, stream, policy, params, resources, vs...)
				base.add(b)
				typed.add(v)
			})
		}
	}
	t.Logf("%d resources of %d Kyverno fixtures checked (those the API server refused outside admission are logged above; %d fixtures admitc refuses to write for the API server skipped), %d disagreements", base.compared, fixtures-skipped, skipped, base.disagreed)
	t.Logf("type variants: %d compared, %d refused outside admission (logged above), %d disagreements", typed.compared, typed.refused, typed.disagreed)
}

// refusedForAPIServer says whether `admitc compile --backend vap,map`
// exited 2 because a policy cannot be expressed for the API server (a
// ValidatingPolicy using Kyverno's image, resource or regex libraries, which
// only admitc serve evaluates): such a fixture is skipped, not failed. Any
// other failure to compile fails the test.
func refusedForAPIServer(code int, stderr string) bool {
	return code == 2 && strings.Contains(stderr, "cannot be expressed by the selected backends")
}

// tally counts the objects decided on the API server and how many of them
// it decided otherwise than admitc test.
type tally struct{ compared, disagreed, refused int }

func (t *tally) add(o tally) {
	t.compared, t.disagreed, t.refused = t.compared+o.compared, t.disagreed+o.disagreed, t.refused+o.refused
}

// decideAsAdmitcTest applies a VAP/MAP stream to the API server and checks
// that every object of resources, and of each of more (files of other
// objects, such as variants), is decided as `admitc test --policies
// policy` decides it: verdict, message and mutation. It tallies the
// resources and the other files apart.
func decideAsAdmitcTest(t *testing.T, stream, policy, resources string, more ...string) (base, others tally) {
	t.Helper()
	return decideAsAdmitcTestWith(t, stream, policy, "", resources, more...)
}

// decideAsAdmitcTestWith is decideAsAdmitcTest with admitc test given the
// parameter objects of the file params ("": none), which the API server
// holds too (clusterConfigMaps).
func decideAsAdmitcTestWith(t *testing.T, stream, policy, params, resources string, more ...string) (base, others tally) {
	t.Helper()
	type judged struct {
		file string
		objs []*unstructured.Unstructured
		want map[string]offline
	}
	var all []judged
	for _, file := range append([]string{resources}, more...) {
		objs, want := judgeOffline(t, policy, params, file)
		all = append(all, judged{file: file, objs: objs, want: want})
	}
	type check struct {
		file string
		obj  *unstructured.Unstructured
		want offline
		tl   *tally
	}
	var checks []check
	for i, j := range all {
		tl := &base
		if i > 0 {
			tl = &others
		}
		for _, o := range j.objs {
			w, ok := j.want[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()]
			require.True(t, ok, "admitc test judged no %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
			checks = append(checks, check{file: j.file, obj: o, want: w, tl: tl})
		}
	}
	// The objects admitc denies first: the API server takes a new policy
	// into effect some time after it is created, and agreeOnAPIServer
	// waits for a denial, while an object it allows agrees at once.
	sort.SliceStable(checks, func(a, b int) bool { return !checks[a].want.Allowed && checks[b].want.Allowed })
	apply(t, stream, false)
	defer deleteVAPs(t, stream)
	for _, c := range checks {
		problems := agreeOnAPIServer(t, c.file, c.obj, c.obj.GetNamespace(), c.want)
		c.tl.compared++
		if len(problems) > 0 {
			c.tl.disagreed++
		}
		assert.Empty(t, problems, "%s: %s %s/%s", c.file, c.obj.GetKind(), c.obj.GetNamespace(), c.obj.GetName())
	}
	return base, others
}

// clusterConfigMaps creates on the API server the ConfigMaps of a Kyverno
// test's clusterResources file (a translated configMap context entry
// reads one as params), deleted when the test ends, and returns a file
// of them for admitc test --params; "" when the file is missing or holds
// none.
func clusterConfigMaps(t *testing.T, cluster string) string {
	t.Helper()
	data, err := os.ReadFile(repo + cluster)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	var doc struct {
		Spec struct {
			Resources []map[string]any `json:"resources"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	var docs []string
	for _, r := range doc.Spec.Resources {
		cm := &unstructured.Unstructured{Object: r}
		if cm.GetAPIVersion() != "v1" || cm.GetKind() != "ConfigMap" {
			continue
		}
		ensureNamespace(t, cm.GetNamespace())
		ri := kc.dynamic.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(cm.GetNamespace())
		_, err := ri.Create(context.Background(), cm, metav1.CreateOptions{})
		require.NoError(t, err, "ConfigMap %s/%s of %s", cm.GetNamespace(), cm.GetName(), cluster)
		t.Cleanup(func() {
			assert.NoError(t, ri.Delete(context.Background(), cm.GetName(), metav1.DeleteOptions{}))
		})
		out, err := yaml.Marshal(cm.Object)
		require.NoError(t, err)
		docs = append(docs, string(out))
	}
	if len(docs) == 0 {
		return ""
	}
	file := filepath.Join(t.TempDir(), "params.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600))
	return file
}

// judgeOffline reads the objects of file (in namespace default when they
// name none), creates their namespaces, and returns them with `admitc
// test --policies policy`'s decisions, by kind/namespace/name.
func judgeOffline(t *testing.T, policy, params, file string) ([]*unstructured.Unstructured, map[string]offline) {
	t.Helper()
	objs := decode(t, file, mustRead(t, file))
	for _, o := range objs {
		if o.GetNamespace() == "" && !clusterScoped(o.GetKind()) {
			o.SetNamespace("default")
		}
		ensureNamespace(t, o.GetNamespace())
		ensurePodServiceAccount(t, o)
	}
	labels := liveNamespaceLabels(t, objs)
	args := []string{"test", "-o", "json", "--namespace-labels", labels, "--policies", policy}
	if params != "" {
		args = append(args, "--params", params)
	}
	out, stderr, code := admitc(t, append(args, file)...)
	require.Contains(t, []int{0, 1}, code, stderr)
	var doc struct {
		Results []kyvernoOffline `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	want := map[string]offline{}
	for _, r := range doc.Results {
		for i := range r.Violations {
			r.Violations[i].Message = strings.TrimPrefix(r.Violations[i].Message, kyvernoMutateError)
		}
		want[r.Kind+"/"+r.Namespace+"/"+r.Name] = r.offline
	}
	return objs, want
}

// kyvernoMutateError is how Kyverno's MutatingPolicy engine words an
// evaluation error (pkg/cel/policies/mpol/engine/engine.go: RuleError
// "failed to evaluate policy"), as admitc test reports it; the API server
// running the translated MutatingAdmissionPolicy reports the same error as
// "policy '<name>' with binding '<name>' denied request: <error>", so the
// error itself is compared.
const kyvernoMutateError = "failed to evaluate policy: "

// liveNamespaceLabels writes the labels the API server holds for the
// objects' namespaces to a --namespace-labels file and returns its path.
func liveNamespaceLabels(t *testing.T, objs []*unstructured.Unstructured) string {
	labels := map[string]map[string]string{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" {
			continue
		}
		got, err := kc.client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		require.NoError(t, err)
		labels[ns] = got.Labels
	}
	data, err := yaml.Marshal(labels)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "namespace-labels.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}
