package migrate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/migrate"
	"github.com/admitc/admitc/internal/verify"
	"github.com/admitc/admitc/runtime"
)

// The proof of the migration, per Kyverno fixture: the fixture's own test
// passes on the original import and the rewritten test on the successors
// read back (admitc verify), and admitc's runtime decides every fixture
// resource alike on the original import, the successors read back and
// the emitted ValidatingAdmissionPolicies or MutatingAdmissionPolicies
// read back.

// fixtures are the validate.cel and ValidatingPolicy/MutatingPolicy
// fixtures, and the pattern fixtures whose tests expect a conditional
// anchor's skip (a pass for the successor). The other pattern fixtures are
// migrated in the e2e suite: their CEL is slow to compile.
var fixtures = []string{"../../examples/kyverno/*", "../../examples/kyverno-pattern/restrict-host-network-ports", "../../examples/kyverno-pattern/require-pull-always-for-latest"}

func fixtureDirs(t *testing.T) []string {
	var dirs []string
	for _, f := range fixtures {
		found, err := filepath.Glob(filepath.Join(f, "policy.yaml"))
		require.NoError(t, err)
		dirs = append(dirs, found...)
	}
	require.GreaterOrEqual(t, len(dirs), 32, "the Kyverno fixtures are missing")
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

// migrated runs migrate on dir and writes its files under a temporary
// directory.
func migrated(t *testing.T, dir string) (string, *migrate.Result) {
	res, err := migrate.Run(context.Background(), []string{dir}, migrate.Options{})
	require.NoError(t, err)
	out := t.TempDir()
	for _, f := range res.Files {
		path := filepath.Join(out, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, f.Data, 0o644))
	}
	return out, res
}

func TestMigratedFixturesPassTheirTests(t *testing.T) {
	total := 0
	for _, dir := range fixtureDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out, res := migrated(t, dir)
			assert.True(t, res.Report.Passed(), "every rule translated without a difference")
			require.Len(t, res.Report.Tests, 1)
			original := runVerify(t, filepath.Join(dir, ".kyverno-test", "kyverno-test.yaml"))
			translated := runVerify(t, filepath.Join(out, filepath.FromSlash(res.Report.Tests[0].Output)))
			assert.NotZero(t, translated)
			assert.LessOrEqual(t, translated, original+res.Report.Tests[0].Results, "no result is invented")
			total += translated
		})
	}
	t.Logf("%d results of rewritten tests passed on the successors", total)
}

// runVerify runs one Kyverno test with admitc verify and fails on any
// result that did not pass; it returns how many passed.
func runVerify(t *testing.T, file string) int {
	rep, err := verify.Run(context.Background(), []string{file}, verify.Options{})
	require.NoError(t, err)
	for _, r := range rep.Results {
		assert.Equal(t, verify.Passed, r.Outcome, "%s: %s on %s: expected %s, got %s %s", file, r.Test, r.Case, r.Expected, r.Got, r.Reason)
	}
	return rep.Summary.Passed
}

func TestMigratedFixturesDecideAlike(t *testing.T) {
	compared := 0
	for _, dir := range fixtureDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out, res := migrated(t, dir)
			require.Len(t, res.Report.Policies, 1)
			files := res.Report.Policies[0].Files
			engines := map[string]*runtime.Engine{
				"original import": engine(t, filepath.Join(dir, "policy.yaml")),
				"successor":       engine(t, filepath.Join(out, files[0])),
			}
			names := []string{"original import", "successor"}
			if refused := res.Report.Policies[0].NativeRefused; len(refused) > 0 {
				require.Len(t, files, 1, "a successor file only: %v", refused)
			} else {
				require.Len(t, files, 2, "a successor file and a native file")
				engines["native "+files[1]] = engine(t, filepath.Join(out, files[1]))
				names = append(names, "native "+files[1])
			}
			for _, req := range requests(t, dir) {
				compared++
				var first, firstName string
				for _, name := range names {
					got := decide(t, engines[name], req)
					if firstName == "" {
						first, firstName = got, name
						continue
					}
					assert.Equal(t, first, got, "%s %s %s/%s as %q: %s and %s decide differently",
						req.Operation, req.Kind.Kind, req.Namespace, req.Name, req.User.GetName(), firstName, name)
				}
			}
		})
	}
	t.Logf("%d requests decided alike by the original import, the successors and the admission policies", compared)
}

func engine(t *testing.T, file string) *runtime.Engine {
	srcs, err := compiler.ReadSources([]string{file})
	require.NoError(t, err)
	set, diags := compiler.Compile(srcs, compiler.Options{})
	require.Empty(t, diags, "%s reads back", file)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	return e
}

// requests are every fixture resource as CREATE and as UPDATE, by an
// anonymous user and by the fixture's userinfo user, with the namespace
// labels of its values file.
func requests(t *testing.T, dir string) []*runtime.Request {
	testDir := filepath.Join(dir, ".kyverno-test")
	ms, err := runtime.ReadManifests([]string{filepath.Join(testDir, "resources.yaml")})
	require.NoError(t, err)
	labels := namespaceLabels(t, filepath.Join(testDir, "values.yaml"))
	users := []user.Info{&user.DefaultInfo{Name: "admitc-proof"}}
	if u := userInfo(t, filepath.Join(testDir, "userinfo.yaml")); u != nil {
		users = append(users, u)
	}
	var out []*runtime.Request
	for _, m := range ms {
		o := m.Object
		if o.GetNamespace() == "" && o.GetKind() != "Namespace" {
			o.SetNamespace("default")
		}
		for _, old := range []*unstructured.Unstructured{nil, o.DeepCopy()} {
			for _, u := range users {
				req := runtime.RequestFor(o.DeepCopy(), old, o.GetNamespace())
				req.User, req.NamespaceLabels = u, labels[o.GetNamespace()]
				out = append(out, req)
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

func namespaceLabels(t *testing.T, file string) map[string]map[string]string {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var v struct {
		NamespaceSelector []struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"namespaceSelector"`
	}
	require.NoError(t, yaml.Unmarshal(data, &v))
	out := map[string]map[string]string{}
	for _, n := range v.NamespaceSelector {
		out[n.Name] = n.Labels
	}
	return out
}

func userInfo(t *testing.T, file string) user.Info {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var u struct {
		UserInfo struct {
			Username string   `json:"username"`
			Groups   []string `json:"groups"`
		} `json:"userInfo"`
	}
	require.NoError(t, yaml.Unmarshal(data, &u))
	return &user.DefaultInfo{Name: u.UserInfo.Username, Groups: u.UserInfo.Groups}
}

// decide is what an engine decides on a request, without policy names:
// the mutated object, and each violation's actions and message, sorted.
func decide(t *testing.T, e *runtime.Engine, req *runtime.Request) string {
	ctx := context.Background()
	mutated, err := e.Mutate(ctx, req)
	require.NoError(t, err)
	vreq := *req
	if mutated.Object != nil {
		vreq.Object = mutated.Object
	}
	validated, err := e.Validate(ctx, &vreq)
	require.NoError(t, err)
	var lines []string
	for _, v := range validated.Violations {
		msg := messageText(v.Message)
		if v.Error {
			msg = evaluationError(msg)
		}
		lines = append(lines, fmt.Sprintf("%v error=%v %s", v.Actions, v.Error, msg))
	}
	sort.Strings(lines)
	var values []string
	for _, v := range validated.AuditAnnotations {
		values = append(values, v)
	}
	sort.Strings(values)
	obj, err := json.Marshal(vreq.Object)
	require.NoError(t, err)
	return fmt.Sprintf("allowed=%v\nviolations:\n%s\naudit: %s\nobject: %s", validated.Allowed(), strings.Join(lines, "\n"), strings.Join(values, ", "), obj)
}

// evaluationErrorText is how each engine words an evaluation error: the
// API server and a Kyverno validate.cel rule name the expression
// ("expression 'E' resulted in error: CAUSE"), a Kyverno ValidatingPolicy
// does not ("error: CAUSE").
var evaluationErrorText = regexp.MustCompile(`(?s)^(?:expression '.*' resulted in error|error): (.*)$`)

// evaluationError is the cause of an evaluation error's message, which the
// engines compared must agree on; other messages are kept as they are.
func evaluationError(msg string) string {
	if m := evaluationErrorText.FindStringSubmatch(msg); m != nil {
		return "evaluation error: " + m[1]
	}
	return msg
}

// failedMessageExpression is Kyverno's message when a messageExpression
// fails; the API server shows the static message instead, which admitc
// writes as this text without the error's detail.
const failedMessageExpression = "failed to evaluate message expression"

func messageText(msg string) string {
	if strings.HasPrefix(msg, failedMessageExpression) {
		return failedMessageExpression
	}
	return msg
}
