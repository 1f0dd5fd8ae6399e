package compare

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/admitc/admitc/runtime"
)

// Live is a real API server: each manifest is created with
// dryRun=All in the namespace, after admitc's generated policies were
// applied, and the API server's answer (denial, warnings, mutated object)
// is the result.
type Live struct {
	client   dynamic.Interface
	warnings *warningRecorder
	applied  []*unstructured.Unstructured
}

type warningRecorder struct{ msgs []string }

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.msgs = append(w.msgs, msg)
}

// NewLive connects with a kubeconfig file and applies the policy objects
// (VAP/MAP and bindings); Close deletes them again.
func NewLive(kubeconfig string, policies []*unstructured.Unstructured) (*Live, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	l := &Live{warnings: &warningRecorder{}}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = l.warnings
	if l.client, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	ctx := context.Background()
	for _, p := range policies {
		gvr := runtime.ResourceFor(p.GroupVersionKind())
		if _, err := l.client.Resource(gvr).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			l.Close()
			return nil, fmt.Errorf("apply %s %s: %w", p.GetKind(), p.GetName(), err)
		}
		l.applied = append(l.applied, p)
	}
	return l, nil
}

// Settle waits until probe is judged by the API server as want says (new
// policies take effect after a short delay), or the timeout passes.
func (l *Live) Settle(ctx context.Context, probe *unstructured.Unstructured, namespace string, want func(Result) bool, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if r, err := l.Admit(ctx, probe.DeepCopy(), namespace); err == nil && want(r) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close deletes the policy objects it applied.
func (l *Live) Close() {
	for i := len(l.applied) - 1; i >= 0; i-- {
		p := l.applied[i]
		_ = l.client.Resource(runtime.ResourceFor(p.GroupVersionKind())).Delete(context.Background(), p.GetName(), metav1.DeleteOptions{})
	}
}

// Name implements Engine.
func (*Live) Name() string { return "apiserver" }

// Admit implements Engine.
func (l *Live) Admit(ctx context.Context, obj *unstructured.Unstructured, namespace string) (Result, error) {
	before := obj.DeepCopy()
	obj.SetNamespace(namespace)
	l.warnings.msgs = nil
	out, err := l.client.Resource(runtime.ResourceFor(obj.GroupVersionKind())).Namespace(namespace).
		Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	r := Result{Engine: "apiserver", Verdict: Allowed}
	switch {
	case err != nil:
		r.Verdict, r.Messages = Denied, []string{err.Error()}
	case len(l.warnings.msgs) > 0:
		r.Verdict, r.Messages = Warned, sortedCopy(l.warnings.msgs)
	}
	if out != nil {
		r.Object = stripServerFields(out)
		r.Mutated = !sameObject(stripServerFields(before), r.Object)
	}
	return r, nil
}

// stripServerFields keeps what a policy could have changed: the API server's
// own defaulting and metadata are not mutations. Only labels and the
// containers' requests are compared, which is what admitc's mutations touch.
func stripServerFields(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	if labels := u.GetLabels(); len(labels) > 0 {
		_ = unstructured.SetNestedStringMap(out.Object, labels, "metadata", "labels")
	}
	for _, path := range podSpecPaths {
		containers, found, _ := unstructured.NestedSlice(u.Object, append(path, "containers")...)
		if !found {
			continue
		}
		var requests []any
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			req, _, _ := unstructured.NestedFieldCopy(cm, "resources", "requests")
			requests = append(requests, req)
		}
		_ = unstructured.SetNestedSlice(out.Object, requests, "requests")
	}
	return out
}

var podSpecPaths = [][]string{{"spec"}, {"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}}
