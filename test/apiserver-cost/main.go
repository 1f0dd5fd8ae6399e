// Command apiserver-cost measures what the emitted admission policies cost
// a real kube-apiserver (make apiserver-cost): admitc's translation of
// every Kyverno pattern fixture (examples/kyverno-pattern) against the
// hand-written CEL twins (examples/twins), each set compiled as `admitc
// compile --backend vap` compiles it and applied in turn to one
// kube-apiserver v1.37.2 on loopback (with etcd, as the e2e suite runs
// them):
//
//   - enforce: the time from the first create of the set's policies and
//     bindings until the API server denies, on a server-side dry run, one
//     resource per fixture that both the translation and the twin deny
//     offline (the API server compiles a policy when its informer sees it;
//     a large set is taken late);
//   - latency: the p50 and p90 of a dry-run create of a three-container
//     Pod (sequential requests, after the set is enforced), and the p50
//     added over the same request with no policy.
//
// Fixtures whose twins read parameters (a ConfigMap) are left out and
// named. Prints one table with the ratios to the twins and issue 31's
// goals (added latency <= 1.5x, time to enforce <= 2x); exits 1 only on
// an error, not on a goal.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/admitc/admitc/internal/apiresources"
	"github.com/admitc/admitc/internal/testcluster"
	"github.com/admitc/admitc/internal/twins"
)

func main() {
	bin := flag.String("bin", "test/e2e/.bin/v1.37.2", "directory holding etcd and kube-apiserver")
	examples := flag.String("examples", "examples", "the examples directory")
	requests := flag.Int("requests", 200, "dry-run creates timed per set")
	timeout := flag.Duration("enforce-timeout", 5*time.Minute, "how long to wait for a set to be enforced")
	run := flag.String("run", "", "only the fixtures whose name matches this regular expression")
	flag.Parse()
	if err := measure(*bin, *examples, *run, *requests, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver-cost:", err)
		os.Exit(1)
	}
}

// set is the admission policies and bindings of one side, in the order
// they are created (policies first).
type set struct {
	name    string
	objects []*unstructured.Unstructured
	cel     int
}

// probe is a resource both sides deny offline.
type probe struct {
	fixture string
	obj     *unstructured.Unstructured
}

// result is one set's measures.
type result struct {
	set            string
	objects, cel   int
	applied        time.Duration
	enforce        time.Duration
	enforced       int
	p50, p90       time.Duration
	createFailures []string
}

var (
	policyGVR  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	bindingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

func measure(bin, examples, run string, requests int, timeout time.Duration) error {
	only, err := regexp.Compile(run)
	if err != nil {
		return err
	}
	fixtures, err := twins.Fixtures(examples)
	if err != nil {
		return err
	}
	translation, twin := &set{name: "translation"}, &set{name: "twins"}
	var probes []probe
	var skipped []string
	for _, f := range fixtures {
		if !only.MatchString(f.Name) {
			continue
		}
		if len(f.Params) > 0 {
			skipped = append(skipped, f.Name)
			continue
		}
		p, err := addFixture(f, translation, twin)
		if err != nil {
			return err
		}
		if p != nil {
			probes = append(probes, *p)
		}
	}
	fmt.Fprintf(os.Stderr, "%d fixtures (left out, reading parameters: %s), %d probes; starting kube-apiserver ...\n",
		len(probes), strings.Join(skipped, ", "), len(probes))
	work, err := os.MkdirTemp("", "admitc-apiserver-cost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	c, err := testcluster.Start(bin, work)
	defer c.Stop()
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 1000, 1000
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := namespaces(ctx, client, probes); err != nil {
		return err
	}
	probes, refused := admittedWithoutPolicies(ctx, client, probes)
	if len(refused) > 0 {
		fmt.Fprintf(os.Stderr, "left out, refused with no policy: %s\n", strings.Join(refused, ", "))
	}
	none := result{set: "no policy"}
	if none.p50, none.p90, err = latency(ctx, client, requests); err != nil {
		return err
	}
	results := []result{none}
	for _, s := range []*set{twin, translation} {
		fmt.Fprintf(os.Stderr, "%s: %d objects ...\n", s.name, len(s.objects))
		r, err := measureSet(ctx, client, s, probes, requests, timeout)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	report(os.Stdout, results, len(probes))
	return nil
}

// addFixture compiles a fixture's original and twin into the two sets,
// and picks its probe: the first resource both deny offline.
func addFixture(f twins.Fixture, translation, twin *set) (*probe, error) {
	o, err := twins.Compile(f.Original)
	if err != nil {
		return nil, err
	}
	t, err := twins.Compile(f.Twin)
	if err != nil {
		return nil, err
	}
	for _, side := range []struct {
		s *set
		c *twins.Compiled
	}{{translation, o}, {twin, t}} {
		objs, err := decode(side.c.VAP)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		side.s.objects = append(side.s.objects, objs...)
		n, err := twins.CELSize(side.c.VAP)
		if err != nil {
			return nil, err
		}
		side.s.cel += n
	}
	eo, err := o.Engine()
	if err != nil {
		return nil, err
	}
	et, err := t.Engine()
	if err != nil {
		return nil, err
	}
	for _, r := range f.Resources {
		do, err := twins.Decide(context.Background(), eo, r, nil)
		if err != nil {
			return nil, err
		}
		dt, err := twins.Decide(context.Background(), et, r, nil)
		if err != nil {
			return nil, err
		}
		if do.Verdict == twins.Denied && dt.Verdict == twins.Denied {
			obj := r.DeepCopy()
			res, err := resourceOf(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			if obj.GetNamespace() == "" && res.Namespaced {
				obj.SetNamespace(twins.DefaultNamespace)
			}
			return &probe{fixture: f.Name, obj: obj}, nil
		}
	}
	return nil, nil
}

// decode reads the policies and bindings of a vap backend file, policies
// first.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var policies, bindings []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		o := &unstructured.Unstructured{Object: m}
		switch o.GetKind() {
		case "ValidatingAdmissionPolicy":
			policies = append(policies, o)
		case "ValidatingAdmissionPolicyBinding":
			bindings = append(bindings, o)
		case "":
		default:
			return nil, fmt.Errorf("unexpected %s in the vap output", o.GetKind())
		}
	}
	return append(policies, bindings...), nil
}

func gvrOf(o *unstructured.Unstructured) schema.GroupVersionResource {
	if o.GetKind() == "ValidatingAdmissionPolicy" {
		return policyGVR
	}
	return bindingGVR
}

// resourceOf is the built-in resource a probe's kind is served as, from
// the Kubernetes release's resource list.
func resourceOf(o *unstructured.Unstructured) (apiresources.Resource, error) {
	gvk := o.GroupVersionKind()
	for _, r := range apiresources.ByKind(gvk.Group, gvk.Kind) {
		if r.Version == gvk.Version {
			return r, nil
		}
	}
	return apiresources.Resource{}, fmt.Errorf("%s is not a built-in kind served in its preferred version", gvk)
}

// dryRun creates o as a server-side dry run.
func dryRun(ctx context.Context, client dynamic.Interface, o *unstructured.Unstructured) error {
	r, err := resourceOf(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	_, err = client.Resource(gvr).Namespace(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// deniedByPolicy says err is an admission policy's denial.
func deniedByPolicy(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
}

// namespaces creates the probes' namespaces, each with the default
// ServiceAccount the ServiceAccount admission plugin looks up (no
// controller manager runs to create it).
func namespaces(ctx context.Context, client dynamic.Interface, probes []probe) error {
	names := []string{twins.DefaultNamespace}
	for _, p := range probes {
		if ns := p.obj.GetNamespace(); ns != "" && !slices.Contains(names, ns) {
			names = append(names, ns)
		}
	}
	for _, ns := range names {
		for _, o := range []struct {
			gvr schema.GroupVersionResource
			obj *unstructured.Unstructured
			in  string
		}{
			{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, object("v1", "Namespace", ns, ""), ""},
			{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, object("v1", "ServiceAccount", "default", ns), ns},
		} {
			_, err := client.Resource(o.gvr).Namespace(o.in).Create(ctx, o.obj, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
	}
	return nil
}

func object(apiVersion, kind, name, namespace string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	o.SetName(name)
	o.SetNamespace(namespace)
	return o
}

// admittedWithoutPolicies keeps the probes the API server admits with no
// policy (the others are refused for reasons no policy gives).
func admittedWithoutPolicies(ctx context.Context, client dynamic.Interface, probes []probe) ([]probe, []string) {
	var kept []probe
	var refused []string
	for _, p := range probes {
		if err := dryRun(ctx, client, p.obj); err != nil {
			refused = append(refused, fmt.Sprintf("%s (%v)", p.fixture, err))
			continue
		}
		kept = append(kept, p)
	}
	return kept, refused
}

// measureSet creates the set, waits until every probe is denied, times
// the latency pod, and deletes the set again (waiting until no probe is
// denied).
func measureSet(ctx context.Context, client dynamic.Interface, s *set, probes []probe, requests int, timeout time.Duration) (result, error) {
	r := result{set: s.name, objects: len(s.objects), cel: s.cel}
	start := time.Now()
	for _, o := range s.objects {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := client.Resource(gvrOf(o)).Create(cctx, o, metav1.CreateOptions{})
		cancel()
		if err != nil {
			r.createFailures = append(r.createFailures, fmt.Sprintf("%s %s: %v", o.GetKind(), o.GetName(), err))
		}
	}
	r.applied = time.Since(start)
	pending := slices.Clone(probes)
	deadline := start.Add(timeout)
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []probe
		for _, p := range pending {
			if !deniedByPolicy(dryRun(ctx, client, p.obj)) {
				still = append(still, p)
			}
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	r.enforce = time.Since(start)
	r.enforced = len(probes) - len(pending)
	for _, p := range pending {
		fmt.Fprintf(os.Stderr, "%s: %s %s/%s not denied after %s\n", s.name, p.fixture, p.obj.GetKind(), p.obj.GetName(), timeout)
	}
	var err error
	if r.p50, r.p90, err = latency(ctx, client, requests); err != nil {
		return r, err
	}
	for _, o := range s.objects {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := client.Resource(gvrOf(o)).Delete(cctx, o.GetName(), metav1.DeleteOptions{})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			return r, err
		}
	}
	// The next set starts once the API server has dropped this one.
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if !slices.ContainsFunc(probes, func(p probe) bool { return deniedByPolicy(dryRun(ctx, client, p.obj)) }) {
			return r, nil
		}
	}
	return r, fmt.Errorf("%s: the API server still enforces the set %s after its deletion", s.name, timeout)
}

// latencyPod is a typical three-container Pod.
func latencyPod() *unstructured.Unstructured {
	container := func(name, image string) map[string]any {
		return map[string]any{
			"name": name, "image": image,
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"memory": "128Mi"},
			},
			"securityContext": map[string]any{
				"allowPrivilegeEscalation": false, "runAsNonRoot": true, "readOnlyRootFilesystem": true,
				"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "latency-probe", "namespace": twins.DefaultNamespace, "labels": map[string]any{"app.kubernetes.io/name": "shop"}},
		"spec": map[string]any{"containers": []any{
			container("app", "registry.example.com/shop/app:1.4.2"),
			container("proxy", "registry.example.com/shop/proxy:2.0.1"),
			container("metrics", "registry.example.com/shop/metrics:0.9.0"),
		}},
	}}
}

// latency times requests sequential dry-run creates of the latency pod
// (whatever the set decides: the API server evaluates every policy that
// matches either way), after a warm-up: p50 and p90.
func latency(ctx context.Context, client dynamic.Interface, requests int) (time.Duration, time.Duration, error) {
	pod := latencyPod()
	for range 20 {
		if err := dryRun(ctx, client, pod); err != nil && !deniedByPolicy(err) {
			return 0, 0, err
		}
	}
	times := make([]time.Duration, 0, requests)
	for range requests {
		start := time.Now()
		err := dryRun(ctx, client, pod)
		times = append(times, time.Since(start))
		if err != nil && !deniedByPolicy(err) {
			return 0, 0, err
		}
	}
	slices.Sort(times)
	return times[len(times)/2], times[len(times)*9/10], nil
}

func report(w io.Writer, results []result, probes int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "set\tobjects\tCEL chars\tcreate s\tenforced s\tprobes denied\tp50 ms\tp90 ms\tp50 added ms\t")
	base := results[0].p50
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%d/%d\t%.2f\t%.2f\t%.2f\t\n", r.set, r.objects, r.cel, r.applied.Seconds(), r.enforce.Seconds(),
			r.enforced, probes, ms(r.p50), ms(r.p90), ms(r.p50-base))
	}
	tw.Flush()
	for _, r := range results {
		for _, f := range r.createFailures {
			fmt.Fprintf(w, "%s: the API server refused %s\n", r.set, f)
		}
	}
	if len(results) == 3 {
		tw, tr := results[1], results[2]
		added := float64(tr.p50-base) / float64(max(tw.p50-base, time.Microsecond))
		enforce := tr.enforce.Seconds() / tw.enforce.Seconds()
		fmt.Fprintf(w, "goal: added p50 latency <= 1.5x the twins': %.1fx (%s)\n", added, verdict(added <= 1.5))
		fmt.Fprintf(w, "goal: time to enforce <= 2x the twins': %.1fx (%s)\n", enforce, verdict(enforce <= 2))
	}
	fmt.Fprintln(w, filepath.Base(os.Args[0])+": sequential dry-run creates on one kube-apiserver v1.37.2 on loopback; the no-policy row is the baseline")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
