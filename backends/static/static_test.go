package static

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestName(t *testing.T) {
	assert.Equal(t, "deny.static.k8s.io", Name("deny"))
	assert.Equal(t, "deny.static.k8s.io", Name("deny.static.k8s.io"), "never twice")
}

func TestPlaceFilesEachKindUnderItsPlugin(t *testing.T) {
	v1 := metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1"}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{TypeMeta: withKind(v1, "ValidatingAdmissionPolicy"), ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{TypeMeta: withKind(v1, "ValidatingAdmissionPolicyBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p"}}
	mp := &admissionregistrationv1.MutatingAdmissionPolicy{TypeMeta: withKind(v1, "MutatingAdmissionPolicy"), ObjectMeta: metav1.ObjectMeta{Name: "m"}}
	byDir, err := place([]runtime.Object{vap, binding, mp})
	require.NoError(t, err)
	assert.Equal(t, []runtime.Object{vap, binding}, byDir["validating-policies"])
	assert.Equal(t, []runtime.Object{mp}, byDir["mutating-policies"])
	assert.Equal(t, "p.static.k8s.io", vap.Name)
	assert.Equal(t, "b.static.k8s.io", binding.Name)
	assert.Equal(t, "p.static.k8s.io", binding.Spec.PolicyName, "the binding follows its policy")
}

func TestPlaceRefusesWhatNoPluginLoads(t *testing.T) {
	for name, tc := range map[string]struct {
		obj runtime.Object
		err string
	}{
		"v1beta1": {
			obj: &admissionregistrationv1beta1.MutatingAdmissionPolicy{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1beta1", Kind: "MutatingAdmissionPolicy"}},
			err: "static manifests hold admissionregistration.k8s.io/v1 policies, bindings and webhook configurations only, not admissionregistration.k8s.io/v1beta1 MutatingAdmissionPolicy",
		},
		"deployment": {
			obj: &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}},
			err: "static manifests hold admissionregistration.k8s.io/v1 policies, bindings and webhook configurations only, not apps/v1 Deployment",
		},
		"service webhook": {
			obj: &admissionregistrationv1.ValidatingWebhookConfiguration{
				TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"}, ObjectMeta: metav1.ObjectMeta{Name: "w"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.admitc.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s"}}}},
			},
			err: `webhook "v.admitc.dev" in "w.static.k8s.io": static webhook configurations need clientConfig.url (kube-apiserver refuses clientConfig.service)`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := place([]runtime.Object{tc.obj})
			require.Error(t, err)
			assert.Equal(t, tc.err, err.Error())
		})
	}
}

func withKind(m metav1.TypeMeta, kind string) metav1.TypeMeta {
	m.Kind = kind
	return m
}
