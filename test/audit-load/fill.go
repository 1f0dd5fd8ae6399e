package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// namespaceName is the i-th load namespace.
func namespaceName(i int) string { return fmt.Sprintf("load-%02d", i) }

// createNamespaces creates the namespaces and their default service
// accounts (there is no controller-manager to do it).
func createNamespaces(ctx context.Context, client kubernetes.Interface, n int) error {
	for i := range n {
		ns := namespaceName(i)
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": fmt.Sprintf("team-%d", i%5)}}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// fillPods creates pods numbered from..to-1, spread round-robin over the
// namespaces, with 16 writers.
func fillPods(ctx context.Context, client kubernetes.Interface, namespaces, from, to int) error {
	next := atomic.Int64{}
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < to; i = int(next.Add(1) - 1) {
				pod := loadPod(i, namespaceName(i%namespaces))
				if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// loadPod is the i-th pod: a web container and a sidecar, most of them
// compliant with the Pod Security and best-practice policies, and a share
// breaking one rule or another (privileged, host network, latest tag,
// no limits, running as root), as a real cluster has.
func loadPod(i int, namespace string) *corev1.Pod {
	web := corev1.Container{
		Name: "web", Image: fmt.Sprintf("registry.k8s.io/nginx-slim:0.%d", 20+i%7),
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptrTo(false), RunAsNonRoot: ptrTo(true), ReadOnlyRootFilesystem: ptrTo(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}}},
	}
	sidecar := *web.DeepCopy()
	sidecar.Name, sidecar.Image, sidecar.Ports = "log-shipper", "registry.k8s.io/fluent-bit:3.1", nil
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": fmt.Sprintf("web-%d", i%40)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{web, sidecar}, AutomountServiceAccountToken: ptrTo(false)},
	}
	breakRules(pod, i)
	return pod
}

// breakRules makes some pods break a rule: about one in three breaks one.
func breakRules(pod *corev1.Pod, i int) {
	c := &pod.Spec.Containers[0]
	switch i % 12 {
	case 1:
		c.SecurityContext.Privileged = ptrTo(true)
		c.SecurityContext.AllowPrivilegeEscalation = nil
	case 3:
		pod.Spec.HostNetwork = true
	case 5:
		c.Image = "nginx:latest"
	case 7:
		c.Resources = corev1.ResourceRequirements{}
	case 9:
		c.SecurityContext.RunAsNonRoot = nil
		c.SecurityContext.RunAsUser = ptrTo(int64(0))
	}
}

func ptrTo[T any](v T) *T { return &v }
