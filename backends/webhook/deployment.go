package webhook

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/ir"
)

// Replicas is how many webhook pods run: with a PodDisruptionBudget of one,
// a node drain never leaves the webhook without an endpoint.
const Replicas = 2

// deploymentObjects are the ServiceAccount and its read-only roles (see
// rbacObjects), and the Service, Deployment and PodDisruptionBudget
// that run `admitc serve` the way the outage story says it must run: two
// replicas spread over nodes, a disruption budget, probes, resources and a
// non-root, read-only container that reads namespaces and the parameter
// objects of sources from its API server. The serving certificate is the
// Secret NAME-tls and the policies the ConfigMap NAME-policies.
func deploymentObjects(w backends.WebhookOptions, sources []ir.ParamSource, reads map[string][]rbacv1.PolicyRule, audited []rbacv1.PolicyRule) []runtime.Object {
	labels := map[string]string{"app.kubernetes.io/name": w.Name, backends.ManagedByLabel: backends.ManagedByValue}
	selector := map[string]string{"app.kubernetes.io/name": w.Name}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: w.ServiceNamespace, Labels: labels}
	}
	minAvailable := intstr.FromInt32(1)
	return append(rbacObjects(w, sources, reads, audited, labels),
		&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta(w.Service),
			Spec: corev1.ServiceSpec{
				Selector: selector,
				Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}},
			},
		},
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta(w.Name),
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(Replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Strategy: appsv1.DeploymentStrategy{
					Type:          appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(0)), MaxSurge: ptr(intstr.FromInt32(1))},
				},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       podSpec(w, selector),
				},
			},
		},
		&policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: meta(w.Name),
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: &minAvailable,
				Selector:     &metav1.LabelSelector{MatchLabels: selector},
			},
		},
	)
}

func podSpec(w backends.WebhookOptions, selector map[string]string) corev1.PodSpec {
	return corev1.PodSpec{
		// The token lets admitc serve watch namespaces and parameter
		// objects, with its roles' read-only rights and no more.
		ServiceAccountName:           w.Name,
		AutomountServiceAccountToken: ptr(true),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr(true),
			RunAsUser:      ptr(int64(65532)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
					TopologyKey:   "kubernetes.io/hostname",
				},
			}},
		}},
		Containers: []corev1.Container{container(w)},
		Volumes: []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: w.Name + "-tls"}}},
			{Name: "policies", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.Name + "-policies"}}}},
		},
	}
}

func container(w backends.WebhookOptions) corev1.Container {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}},
			PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3,
		}
	}
	args := []string{"serve", "--policies", "/etc/admitc/policies", "--cert", "/etc/admitc/tls/tls.crt",
		"--key", "/etc/admitc/tls/tls.key", "--port", "8443"}
	if w.AuditInterval > 0 {
		args = append(args, "--audit-interval", w.AuditInterval.String())
	}
	return corev1.Container{
		Name:           "admitc",
		Image:          w.Image,
		Args:           args,
		Ports:          []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}},
		ReadinessProbe: probe("/readyz"),
		LivenessProbe:  probe("/healthz"),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tls", MountPath: "/etc/admitc/tls", ReadOnly: true},
			{Name: "policies", MountPath: "/etc/admitc/policies", ReadOnly: true},
		},
	}
}

func ptr[T any](v T) *T { return &v }
