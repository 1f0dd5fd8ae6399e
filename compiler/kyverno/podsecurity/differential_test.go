package podsecurity

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/kubetyped"
	"github.com/admitc/admitc/internal/variants"
)

// The checks table is the fork's DefaultChecks: the same IDs in the same
// order, levels and minimum versions.
func TestChecksAreTheForksDefaultChecks(t *testing.T) {
	forks := policy.DefaultChecks()
	require.Len(t, Checks, len(forks))
	for i, c := range forks {
		assert.Equal(t, string(c.ID), Checks[i].ID)
		assert.Equal(t, c.Level == api.LevelRestricted, Checks[i].Restricted, c.ID)
		require.Len(t, Checks[i].Versions, len(c.Versions), c.ID)
		for j, v := range c.Versions {
			assert.Equal(t, api.MajorMinorVersion(1, Checks[i].Versions[j].Minor), v.MinimumVersion, c.ID)
		}
	}
}

// seedPods are pods that reach each check's branches; the variants change
// them further.
var seedPods = []string{`
apiVersion: v1
kind: Pod
metadata:
  name: restricted
  annotations:
    container.apparmor.security.beta.kubernetes.io/app: runtime/default
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  initContainers:
  - name: init
    image: busybox:1.36
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  containers:
  - name: app
    image: ghcr.io/acme/app:1.2.3
    ports: [{containerPort: 8080}]
    securityContext: {allowPrivilegeEscalation: false, runAsUser: 1000, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
  volumes:
  - {name: data, emptyDir: {}}
`, `
apiVersion: v1
kind: Pod
metadata:
  name: loose
  annotations:
    container.apparmor.security.beta.kubernetes.io/app1: unconfined
    container.apparmor.security.beta.kubernetes.io/side: localhost/x
spec:
  hostPID: true
  securityContext: {runAsUser: 0, seLinuxOptions: {type: spc_t}, sysctls: [{name: net.ipv4.tcp_rmem, value: "1"}, {name: kernel.msgmax, value: "1"}]}
  containers:
  - name: app1
    image: nginx:1.27
    securityContext: {privileged: true, runAsNonRoot: false, procMount: Unmasked, capabilities: {add: [SYS_ADMIN, CHOWN]}}
    readinessProbe: {tcpSocket: {host: db, port: 5432}}
  - name: side
    image: docker.io/library/nginx:1.27
    ports: [{containerPort: 80, hostPort: 80}]
    securityContext: {seccompProfile: {type: Unconfined}, appArmorProfile: {type: Unconfined}, windowsOptions: {hostProcess: true}}
  ephemeralContainers:
  - name: debug
    image: busybox
    securityContext: {seLinuxOptions: {user: root}}
  volumes:
  - {name: host, hostPath: {path: /var/run}}
  - {name: nfs, nfs: {server: s, path: /}}
`}

// segment is check c over its records recs as the message prints it, the
// empty string when it passes (a Pod: spec is written spec).
func segment(c Check, recs string) string {
	return "[[" + recs + "].map(d, [dyn(" + c.reason("d") + "), dyn(d)])[0]].map(c, " + CheckFails("c") + " ? " + printedCheck("c", "'spec'") + " : '')[0]"
}

// TestChecksAgreeWithTheForksChecks runs every version of every check of
// Kyverno's fork of pod-security-admission (with field errors, as Kyverno
// runs them) and its CEL translation on seeded variants of the seed pods:
// the same allowed or denied, and the same field errors as Kyverno prints
// them (the forbidden reason included). Variants that do not decode as a
// Pod are counted apart: Kyverno answers them with its rule error, before
// any check.
func TestChecksAgreeWithTheForksChecks(t *testing.T) {
	pods := podVariants(t, 150)
	forks := policy.DefaultChecks()
	comparisons, denied, undecodable := 0, 0, 0
	for i, c := range Checks {
		for j, v := range c.Versions {
			if v.Records == nil {
				continue // seccompProfile_baseline 1.0 reads annotations no claimed version selects
			}
			// The records an exclusion reads (full) print as the short ones.
			eval := program(t, []Variable{{"kpsPod", DefaultView(specOf, metaOf)}}, segment(c, v.Records(recorder{raw: c.readsRecords()}, "variables.kpsPod")))
			evalFull := program(t, []Variable{{"kpsPod", DefaultView(specOf, metaOf)}}, segment(c, v.Records(recorder{full: true}, "variables.kpsPod")))
			for _, p := range pods {
				typed, ok := decodePod(p.Object)
				if !ok {
					undecodable++
					continue
				}
				got, err := eval(p.Object)
				require.NoError(t, err, "%s v1.%d on %s", c.ID, v.Minor, p.Name)
				full, err := evalFull(p.Object)
				require.NoError(t, err, "%s v1.%d on %s (full records)", c.ID, v.Minor, p.Name)
				assert.Equal(t, got, full, "%s v1.%d on %s (full records)", c.ID, v.Minor, p.Name)
				res := forks[i].Versions[j].CheckPod(&typed.ObjectMeta, &typed.Spec, policy.WithFieldErrors())
				want := ""
				if !res.Allowed {
					want = printed(res)
					denied++
				}
				comparisons++
				if !multiAnnotations(res, got, want) {
					assert.Equal(t, want, got, "%s v1.%d on %s", c.ID, v.Minor, p.Name)
				}
			}
		}
	}
	t.Logf("%d pods, %d comparisons (%d denied), %d variants not decodable as a Pod", len(pods), comparisons, denied, undecodable/len(Checks))
	assert.Greater(t, denied, 1000)
	assert.Greater(t, comparisons-denied, 1000)
}

const (
	specOf = "object.?spec.orValue({})"
	metaOf = "object.?metadata.orValue({})"
)

// multiAnnotations says whether the check reported several AppArmor
// annotations, whose order is Go's map order in the fork: then the same
// errors in any order agree.
func multiAnnotations(res policy.CheckResult, got, want string) bool {
	if res.ErrList == nil || strings.Count(want, "metadata.annotations[") < 2 {
		return false
	}
	split := func(s string) []string { return strings.Split(strings.TrimSuffix(s, "])"), ", ") }
	return assert.ElementsMatch(&testing.T{}, split(want), split(got))
}

// printed is one check's part of Kyverno's message (pss.FormatChecksPrint).
func printed(res policy.CheckResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(Forbidden reason: %s, field error list: [", res.ForbiddenReason)
	if res.ErrList != nil {
		for i, err := range *res.ErrList {
			// Kyverno's convertChecks, for a Pod.
			err.Field = strings.ReplaceAll(err.Field, "metadata", "spec.template.metadata")
			exist := true
			if s, ok := err.BadValue.(string); ok && s == "" {
				exist = false
			}
			if err.Type == field.ErrorTypeForbidden && exist {
				fmt.Fprintf(&b, "%s is forbidden, forbidden values found: %+v", err.Field, err.BadValue)
			} else {
				b.WriteString(err.Error())
			}
			if i != len(*res.ErrList)-1 {
				b.WriteString(", ")
			}
		}
	}
	b.WriteString("])")
	return b.String()
}

func decodePod(obj map[string]any) (corev1.Pod, bool) {
	var pod corev1.Pod
	data, err := json.Marshal(obj)
	if err != nil {
		return pod, false
	}
	return pod, json.Unmarshal(data, &pod) == nil
}

func podVariants(t *testing.T, count int) []variants.Variant {
	var out []variants.Variant
	for i, s := range seedPods {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(s), &obj))
		obj = int64s(obj).(map[string]any)
		vs, err := variants.Generate(obj, variants.Options{Seed: int64(i + 1), Count: count, PodSecurity: true})
		require.NoError(t, err)
		out = append(append(out, variants.Variant{Name: "seed", Object: obj}), vs...)
	}
	return out
}

// int64s makes integral numbers int64, as an unstructured object holds them.
func int64s(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = int64s(e)
		}
	case []any:
		for i, e := range x {
			x[i] = int64s(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

// TestChecksDecideAlikeOnTypedPods evaluates every check's translation on
// the variants that decode as a Pod twice: on the object as kube-apiserver
// 1.36 presents it (cel-go's maps and lists) and as 1.37 presents a
// built-in object (package kubetyped: a map or list compared with a value
// of another kind raises "no such overload"). The checks read fields of
// the Pod's schema only, so the answers must be the same and never an
// error.
func TestChecksDecideAlikeOnTypedPods(t *testing.T) {
	pods := podVariants(t, 40)
	compared := 0
	for _, c := range Checks {
		for _, v := range c.Versions {
			if v.Records == nil {
				continue
			}
			eval := program(t, []Variable{{"kpsPod", DefaultView(specOf, metaOf)}}, segment(c, v.Records(recorder{raw: c.readsRecords()}, "variables.kpsPod")))
			for _, p := range pods {
				if _, ok := decodePod(p.Object); !ok {
					continue
				}
				plain, err := eval(p.Object)
				require.NoError(t, err, "%s v1.%d on %s (1.36)", c.ID, v.Minor, p.Name)
				typed, err := eval(kubetyped.Value(p.Object))
				require.NoError(t, err, "%s v1.%d on %s (1.37)", c.ID, v.Minor, p.Name)
				assert.Equal(t, plain, typed, "%s v1.%d on %s", c.ID, v.Minor, p.Name)
				compared++
			}
		}
	}
	t.Logf("%d comparisons", compared)
	assert.Greater(t, compared, 1000)
}

// TestVerdictsAgreeWithTheForksChecks runs every version of every check of
// Kyverno's fork and its typed verdict (fails.go) on the variants of the
// seed pods that the verdicts are written for: those that decode as a Pod
// and hold no null (the API server's objects), given to CEL as 1.36 and as
// 1.37 present them. A verdict fails exactly when the check does.
func TestVerdictsAgreeWithTheForksChecks(t *testing.T) {
	pods := podVariants(t, 150)
	forks := policy.DefaultChecks()
	compared, denied := 0, 0
	for i, c := range Checks {
		for j, v := range c.Versions {
			if v.Fails == nil {
				continue
			}
			p := &TypedPod{Spec: "object.spec", Meta: "object.metadata", Containers: "variables.allContainers"}
			all := "object.spec.?initContainers.orValue([]) + object.spec.?containers.orValue([]) + object.spec.?ephemeralContainers.orValue([])"
			eval := program(t, []Variable{{"allContainers", all}}, "("+v.Fails(p)+") ? 'fail' : ''")
			for _, pod := range pods {
				typed, ok := decodePod(pod.Object)
				if !ok || hasNull(pod.Object) || pod.Object["spec"] == nil || pod.Object["metadata"] == nil {
					continue
				}
				res := forks[i].Versions[j].CheckPod(&typed.ObjectMeta, &typed.Spec, policy.WithFieldErrors())
				want := ""
				if !res.Allowed {
					want = "fail"
					denied++
				}
				for _, obj := range []any{pod.Object, kubetyped.Value(pod.Object)} {
					got, err := eval(obj)
					require.NoError(t, err, "%s v1.%d on %s", c.ID, v.Minor, pod.Name)
					assert.Equal(t, want, got, "%s v1.%d on %s: %s", c.ID, v.Minor, pod.Name, v.Fails(&TypedPod{Spec: "object.spec", Meta: "object.metadata", Containers: "variables.allContainers"}))
				}
				compared++
			}
		}
	}
	t.Logf("%d comparisons (%d denied)", compared, denied)
	assert.Greater(t, denied, 1000)
	assert.Greater(t, compared-denied, 1000)
}

// hasNull says whether v holds a null anywhere.
func hasNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if hasNull(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNull(e) {
				return true
			}
		}
	}
	return false
}
