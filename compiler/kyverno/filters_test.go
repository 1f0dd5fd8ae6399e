package kyverno_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

const privilegedPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: disallow-privileged-containers}
spec:
  rules:
  - name: privileged-containers
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Enforce
      message: Privileged mode is disallowed.
      pattern:
        spec:
          containers:
          - =(securityContext):
              =(privileged): "false"
`

func compileFiltered(t *testing.T, src string, f *kyverno.Filters) *ir.PolicySet {
	t.Helper()
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{})
	require.Empty(t, diags)
	if f == nil {
		return set
	}
	out, err := f.Apply(set)
	require.NoError(t, err)
	return out
}

func privilegedPod(t *testing.T, namespace string) *unstructured.Unstructured {
	obj := pod(t, `{containers: [{name: kube-proxy, image: "registry.k8s.io/kube-proxy:v1.36.0", securityContext: {privileged: true}}]}`)
	obj.SetName("kube-proxy-x1")
	obj.SetNamespace(namespace)
	return obj
}

func admit(t *testing.T, set *ir.PolicySet, req *runtime.Request) bool {
	t.Helper()
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	res, err := e.Admit(context.Background(), req)
	require.NoError(t, err)
	return res.Allowed()
}

// Kyverno's default installation never judges a request in kube-system, a
// ReplicaSet, or a request by a node (system:nodes): with the chart's
// filters applied, neither does the translation; without them (as kyverno
// test judges), the privileged kube-proxy pod is denied.
func TestDefaultFiltersKeepWhatKyvernoNeverJudges(t *testing.T) {
	rs := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d8f, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx, securityContext: {privileged: true}}]}
`), &rs.Object))
	node := runtime.RequestFor(privilegedPod(t, "shop"), nil, "shop")
	node.User = &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	cases := map[string]struct {
		req              *runtime.Request
		filtered, kyvTst bool
	}{
		"kube-proxy in kube-system":           {runtime.RequestFor(privilegedPod(t, "kube-system"), nil, "kube-system"), true, false},
		"kube-public":                         {runtime.RequestFor(privilegedPod(t, "kube-public"), nil, "kube-public"), true, false},
		"Kyverno's own namespace":             {runtime.RequestFor(privilegedPod(t, "kyverno"), nil, "kyverno"), true, false},
		"a ReplicaSet a Deployment creates":   {runtime.RequestFor(rs, nil, "shop"), true, false},
		"a mirror pod created by the kubelet": {node, true, false},
		"the same pod in shop":                {runtime.RequestFor(privilegedPod(t, "shop"), nil, "shop"), false, false},
	}
	filtered := compileFiltered(t, privilegedPolicy, kyverno.DefaultFilters())
	unfiltered := compileFiltered(t, privilegedPolicy, nil)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.filtered, admit(t, filtered, tc.req), "with the chart's filters")
			assert.Equal(t, tc.kyvTst, admit(t, unfiltered, tc.req), "without filters, as kyverno test")
		})
	}
}

// The filters become binding exclusions a reviewer can read: a
// namespaceSelector, and only the excluded resources the policy matches
// (the autogen rule's ReplicaSets, not Events or Nodes); the requesters
// Kyverno leaves out become one match condition.
func TestFiltersAreBindingExclusions(t *testing.T) {
	set := compileFiltered(t, privilegedPolicy, kyverno.DefaultFilters())
	byName := map[string]ir.Policy{}
	for _, p := range set.Policies {
		byName[p.Name] = p
	}
	pod := byName["disallow-privileged-containers.privileged-containers"]
	mr := pod.Bindings[0].MatchResources
	require.NotNil(t, mr)
	assert.Equal(t, &ir.LabelSelector{MatchExpressions: []ir.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: "NotIn", Values: []string{"kube-node-lease", "kube-public", "kube-system", "kyverno"}},
	}}, mr.NamespaceSelector)
	assert.Empty(t, mr.ExcludeResourceRules, "a Pod policy excludes nothing else: pods/binding is not matched")
	assert.Equal(t, []ir.NamedExpression{{Name: kyverno.UsersCondition, Expression: `!("system:nodes" in request.userInfo.?groups.orValue([]))`, Origin: pod.Origin}}, pod.MatchConditions[:1])

	controllers := byName["disallow-privileged-containers.autogen-privileged-containers"]
	var excluded []string
	for _, r := range controllers.Bindings[0].MatchResources.ExcludeResourceRules {
		excluded = append(excluded, strings.Join(r.APIGroups, ",")+":"+strings.Join(r.Resources, ","))
	}
	assert.Equal(t, []string{"apps:replicasets"}, excluded, "replicasets/* is excluded too, but the policy does not match it")
}

// A ConfigMap's filters are read as Kyverno's configuration.load reads
// them; what a binding cannot say becomes a match condition; roles are
// refused.
func TestReadFilters(t *testing.T) {
	cm := `apiVersion: v1
kind: ConfigMap
metadata: {name: kyverno, namespace: kyverno}
data:
  resourceFilters: '[*/*,kube-system,*][Pod,team-*,*][*/*,ops,*]'
  excludeGroups: 'system:nodes, !system:masters'
  excludeUsernames: 'ci-*'
  webhooks: '{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kyverno"]}]}}'
`
	f, err := kyverno.ReadFilters("kyverno.yaml", []byte(cm))
	require.NoError(t, err)
	assert.Equal(t, []string{"kube-system", "kyverno", "ops"}, f.ExcludedNamespaces())
	set := compileFiltered(t, privilegedPolicy, f)
	p := set.Policies[0]
	require.Equal(t, kyverno.FiltersCondition, p.MatchConditions[0].Name)
	cases := map[string]struct {
		namespace string
		user      user.Info
		allowed   bool
	}{
		"team namespace filtered by [Pod,team-*,*]": {"team-a", nil, true},
		"ops left out by the namespaceSelector":     {"ops", nil, true},
		"a CI user":                                 {"shop", &user.DefaultInfo{Name: "ci-bot"}, true},
		"a node that is also a master is judged":    {"shop", &user.DefaultInfo{Name: "n", Groups: []string{"system:nodes", "system:masters"}}, false},
		"anyone else in shop":                       {"shop", &user.DefaultInfo{Name: "alice"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := runtime.RequestFor(privilegedPod(t, tc.namespace), nil, tc.namespace)
			if tc.user != nil {
				req.User = tc.user
			}
			assert.Equal(t, tc.allowed, admit(t, set, req))
		})
	}

	_, err = kyverno.ReadFilters("kyverno.yaml", []byte(strings.Replace(cm, "excludeUsernames: 'ci-*'", "excludeRoles: 'cluster-admin'", 1)))
	assert.EqualError(t, err, "kyverno.yaml: data.excludeRoles: Kyverno resolves a requester's roles from RoleBindings at admission, which an admission policy cannot; admitc cannot leave these requests out, so it refuses rather than judge them (remove data.excludeRoles from this copy to judge them)")
	f, err = kyverno.ReadFilters("kyverno.yaml", []byte(strings.Replace(cm, "[Pod,team-*,*]", "[Widget,*,*]", 1)))
	require.NoError(t, err)
	_, err = f.Apply(set)
	assert.ErrorContains(t, err, "resourceFilters entry [Widget,*,*]: kind Widget is not served by Kubernetes 1.36")
}

// The defaults are the chart's: config.resourceFilters of Kyverno
// v1.19.1's charts/kyverno/values.yaml rendered for release kyverno in
// namespace kyverno, after the [*/*,kyverno,*] excludeKyvernoNamespace
// prepends, and config.excludeGroups.
func TestDefaultFiltersAreTheChartDefaults(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kyverno/kyverno").Output()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "charts", "kyverno", "values.yaml"))
	require.NoError(t, err)
	var values struct {
		Config struct {
			ResourceFilters []string `json:"resourceFilters"`
			ExcludeGroups   []string `json:"excludeGroups"`
		} `json:"config"`
	}
	require.NoError(t, yaml.Unmarshal(data, &values))
	want := []string{"[*/*,kyverno,*]"}
	for _, f := range values.Config.ResourceFilters {
		want = append(want, renderChartTemplates(t, f))
	}
	var got []string
	d := kyverno.DefaultFilters()
	for _, r := range d.Resources {
		got = append(got, r.String())
	}
	assert.Equal(t, want, got)
	assert.Equal(t, values.Config.ExcludeGroups, d.ExcludeGroups)
}

var (
	chartIf       = regexp.MustCompile(`\{\{ if [^}]*\}\}\{\{[^}]*\}\}\{\{ else \}\}(\{\{[^}]*\}\})\{\{ end \}\}`)
	chartTemplate = regexp.MustCompile(`\{\{ (?:include|template) "([^"]+)" \. \}\}`)
)

// renderChartTemplates renders the chart's name templates for release
// kyverno in namespace kyverno (serviceMonitor.namespace unset).
func renderChartTemplates(t *testing.T, s string) string {
	s = chartIf.ReplaceAllString(s, "$1")
	s = chartTemplate.ReplaceAllStringFunc(s, func(tmpl string) string {
		name := strings.TrimPrefix(chartTemplate.FindStringSubmatch(tmpl)[1], "kyverno.")
		switch {
		case name == "namespace", name == "fullname", name == "config.configMapName":
			return "kyverno"
		case name == "config.metricsConfigMapName":
			return "kyverno-metrics"
		case name == "admission-controller.serviceName":
			return "kyverno-svc"
		case strings.HasSuffix(name, ".roleName"):
			return "kyverno:" + strings.TrimSuffix(name, ".roleName")
		case strings.HasSuffix(name, ".serviceAccountName"), strings.HasSuffix(name, ".name"):
			return "kyverno-" + strings.TrimSuffix(strings.TrimSuffix(name, ".serviceAccountName"), ".name")
		}
		t.Fatalf("chart template %q is not known to this test", name)
		return ""
	})
	require.NotContains(t, s, "{{")
	return s
}
