package render

import (
	sigsyaml "sigs.k8s.io/yaml"
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

// TestJSONToYAMLAsSigsYAML: the fast JSON-to-YAML writes exactly the bytes
// sigs.k8s.io/yaml's JSONToYAML writes, numbers and quoting included.
func TestJSONToYAMLAsSigsYAML(t *testing.T) {
	for _, doc := range []string{
		`{"a":1,"b":1.5,"c":1e3,"d":-7,"e":0,"f":1.0,"g":9223372036854775807,"h":18446744073709551615,"i":1e400000}`,
		`{"s":["yes","no","on","1","1.5","null","~","","0x10","012","true","a: b","- x","#c","é\u2028","multi\nline","  padded "]}`,
		`{"z":{"b":[],"a":{}},"y":null,"x":true,"10":"k","9":"k","a10":1,"a9":2}`,
		`[1,"two",{"three":[3.25,-0.5e-7]}]`,
		`"plain"`,
	} {
		want, werr := sigsyaml.JSONToYAML([]byte(doc))
		got, gerr := jsonToYAML([]byte(doc))
		if werr != nil {
			assert.Error(t, gerr, doc)
			continue
		}
		require.NoError(t, gerr, doc)
		assert.Equal(t, string(want), string(got), doc)
	}
}
