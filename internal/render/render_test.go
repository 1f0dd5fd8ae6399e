package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestObjectDropsStatus(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "admitc", Namespace: "admission-system"}
	for name, obj := range map[string]runtime.Object{
		"Service":             &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta},
		"PodDisruptionBudget": &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}, ObjectMeta: meta},
		"Deployment":          &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := Object(obj)
			require.NoError(t, err)
			assert.NotContains(t, string(data), "status")
			assert.NotContains(t, string(data), "creationTimestamp")
			assert.Contains(t, string(data), "kind: "+name+"\n")
		})
	}
}

func TestObjectKeepsEverythingElse(t *testing.T) {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "a<b>&c", Annotations: map[string]string{"status": "kept"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}
	data, err := Object(svc)
	require.NoError(t, err)
	assert.Equal(t, "apiVersion: v1\nkind: Service\nmetadata:\n  annotations:\n    status: kept\n  name: a<b>&c\n"+
		"spec:\n  ports:\n  - name: https\n    port: 443\n    targetPort: 0\n", string(data))
}
