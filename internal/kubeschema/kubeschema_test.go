package kubeschema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/apiresources"
)

func TestBuiltinPod(t *testing.T) {
	r, err := NewResolver()
	require.NoError(t, err)
	pod, ok := r.Schema(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	require.True(t, ok)
	assert.Equal(t, Object, pod.Shape())
	assert.True(t, pod.AlwaysPresent("spec"), "PodSpec is a struct")
	assert.True(t, pod.AlwaysPresent("metadata"))
	spec, _ := pod.Field("spec")
	assert.True(t, spec.AlwaysPresent("containers"), "required")
	assert.False(t, spec.AlwaysPresent("initContainers"))
	assert.False(t, spec.AlwaysPresent("hostNetwork"), "a bool with omitempty")
	containers, _ := spec.Field("containers")
	assert.Equal(t, List, containers.Shape())
	c := containers.Items()
	assert.True(t, c.AlwaysPresent("resources"), "ResourceRequirements is a struct")
	assert.False(t, c.AlwaysPresent("securityContext"), "a pointer")
	sc, _ := c.Field("securityContext")
	priv, _ := sc.Field("privileged")
	assert.Equal(t, Boolean, priv.Shape())
	res, _ := c.Field("resources")
	limits, _ := res.Field("limits")
	assert.Equal(t, Map, limits.Shape())
	assert.Equal(t, String, limits.Values().Shape(), "a quantity is a string")
	assert.True(t, limits.Values().Quantity(), "a limit is a resource.Quantity")
	assert.False(t, limits.Quantity(), "the map is not")
	image, _ := c.Field("image")
	assert.False(t, image.Quantity())
	assert.Equal(t, FormatDNSLabel, c.FieldFormat("name"), "a container's name is a DNS label")
	assert.Equal(t, "", c.FieldFormat("image"))
	mounts, _ := c.Field("volumeMounts")
	assert.Equal(t, FormatDNSLabel, mounts.Items().FieldFormat("name"))
	podMeta, _ := pod.Field("metadata")
	assert.Equal(t, "", podMeta.FieldFormat("name"), "an object's name is a subdomain, not a label")
	assert.Equal(t, FormatLabelValue, podMeta.ValuesFormat("labels"))
	assert.Equal(t, "", podMeta.ValuesFormat("annotations"), "an annotation is any text")
	emptyDir, _ := spec.Field("volumes")
	ed, _ := emptyDir.Items().Field("emptyDir")
	sizeLimit, _ := ed.Field("sizeLimit")
	assert.True(t, sizeLimit.Quantity(), "a pointer to a quantity")
	ports, _ := c.Field("ports")
	port, _ := ports.Items().Field("containerPort")
	assert.Equal(t, Integer, port.Shape())
	meta, _ := pod.Field("metadata")
	labels, _ := meta.Field("labels")
	assert.Equal(t, Map, labels.Shape())
	probe, _ := c.Field("livenessProbe")
	httpGet, _ := probe.Field("httpGet")
	hp, _ := httpGet.Field("port")
	assert.Equal(t, IntOrString, hp.Shape())
	assert.True(t, httpGet.AlwaysPresent("port"))

	dep, ok := r.Schema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	require.True(t, ok)
	dspec, _ := dep.Field("spec")
	assert.True(t, dspec.AlwaysPresent("template"))
	tpl, _ := dspec.Field("template")
	assert.True(t, tpl.AlwaysPresent("spec"))
	_, ok = r.Schema(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	assert.False(t, ok)
}

// crds reads the CRD fixtures of the golden corpus.
func crds(t *testing.T, names ...string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("..", "..", "golden", "testdata", "crds", name))
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.Unmarshal(data, crd))
		out = append(out, crd)
	}
	return out
}

func TestCRDResources(t *testing.T) {
	r, err := NewResolver(crds(t, "cert-manager-certificate.yaml", "flux-helmrelease.yaml")...)
	require.NoError(t, err)
	cert := []Resource{{Resource: apiresources.Resource{Group: "cert-manager.io", Version: "v1", Resource: "certificates", Kind: "Certificate",
		Namespaced: true, Preferred: true, Subresources: []string{"status"}}, Custom: true}}
	assert.Equal(t, cert, r.Resources("cert-manager.io", "Certificate"))
	assert.Equal(t, cert, r.Resources("*", "Certificate"))
	assert.Empty(t, r.Resources("example.com", "Certificate"), "another group")
	assert.Empty(t, Builtins().Resources("*", "Certificate"), "no CRD given")

	var versions []string
	for _, res := range r.Resources("*", "HelmRelease") {
		versions = append(versions, res.Version)
	}
	assert.Equal(t, []string{"v2", "v2beta2"}, versions, "every served version, in the CRD's order")

	pods := r.Resources("*", "Pod")
	require.Len(t, pods, 1)
	assert.False(t, pods[0].Custom)
	assert.Equal(t, "pods", pods[0].Resource.Resource)
}

func TestCRDSchema(t *testing.T) {
	r, err := NewResolver(crds(t, "cert-manager-certificate.yaml", "flux-helmrelease.yaml")...)
	require.NoError(t, err)
	cert, ok := r.Schema(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	require.True(t, ok)
	assert.False(t, cert.AlwaysPresent("spec"), "not required by the CRD")
	spec, _ := cert.Field("spec")
	assert.True(t, spec.AlwaysPresent("issuerRef"), "required")
	assert.False(t, spec.AlwaysPresent("privateKey"))
	dns, _ := spec.Field("dnsNames")
	assert.Equal(t, List, dns.Shape())
	assert.Equal(t, String, dns.Items().Shape())
	isCA, _ := spec.Field("isCA")
	assert.Equal(t, Boolean, isCA.Shape())
	_, ok = spec.Field("notInTheSchema")
	assert.False(t, ok, "the API server prunes a field the schema does not have")
	tpl, _ := spec.Field("secretTemplate")
	labels, _ := tpl.Field("labels")
	assert.Equal(t, Map, labels.Shape())

	meta, _ := cert.Field("metadata")
	annotations, _ := meta.Field("annotations")
	assert.Equal(t, Map, annotations.Shape(), "a CRD's metadata is ObjectMeta, whatever its schema says")

	hr, ok := r.Schema(schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"})
	require.True(t, ok)
	hspec, _ := hr.Field("spec")
	values, ok := hspec.Field("values")
	require.True(t, ok)
	assert.Equal(t, Unknown, values.Shape(), "x-kubernetes-preserve-unknown-fields")
	status, _ := hr.Field("status")
	phase, ok := status.Field("phase")
	assert.True(t, ok, "a field a preserve-unknown-fields object does not name is kept")
	assert.Equal(t, Unknown, phase.Shape())
}

func TestCRDOpenPlaces(t *testing.T) {
	crd := crds(t, "cert-manager-certificate.yaml")[0]
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	keep := true
	spec := root.Properties["spec"]
	spec.XPreserveUnknownFields = &keep
	commonName := spec.Properties["commonName"]
	commonName.Nullable = true
	spec.Properties["commonName"] = commonName
	root.Properties["spec"] = spec
	root.Properties["template"] = apiextensionsv1.JSONSchemaProps{Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: &keep,
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"x": {Type: "string"}}}}}
	r, err := NewResolver(crd)
	require.NoError(t, err)
	cert, _ := r.Schema(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	s, _ := cert.Field("spec")
	assert.Equal(t, Object, s.Shape(), "the fields it names keep their schema")
	dns, _ := s.Field("dnsNames")
	assert.Equal(t, List, dns.Shape())
	other, ok := s.Field("notInTheSchema")
	assert.True(t, ok, "kept by x-kubernetes-preserve-unknown-fields")
	assert.Equal(t, Unknown, other.Shape())
	cn, _ := s.Field("commonName")
	assert.Equal(t, Unknown, cn.Shape(), "nullable: the field may hold null")
	tpl, _ := cert.Field("template")
	m, ok := tpl.Field("metadata")
	assert.True(t, ok, "an embedded resource has metadata")
	assert.Equal(t, Unknown, m.Shape())
}

func TestCRDWithoutNames(t *testing.T) {
	crd := crds(t, "cert-manager-certificate.yaml")[0]
	crd.Spec.Names.Plural = ""
	_, err := NewResolver(crd)
	assert.EqualError(t, err, `CRD "certificates.cert-manager.io": a CustomResourceDefinition needs spec.group, spec.names.kind and spec.names.plural`)
}
