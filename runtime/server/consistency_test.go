package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/runtime/server"
)

// Objects of the reviews below, as the API server writes them.
const (
	podObject       = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","labels":{"team":"shop"}},"spec":{"securityContext":{"runAsNonRoot":true},"containers":[{"name":"web","image":"registry.k8s.io/pause:3.10"}]}}`
	scaleObject     = `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":3}}`
	evictionObject  = `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web","namespace":"shop"}}`
	execOptions     = `{"apiVersion":"v1","kind":"PodExecOptions","stdout":true,"container":"web","command":["sh"]}`
	proxyOptions    = `{"apiVersion":"v1","kind":"PodProxyOptions","path":"/"}`
	deleteOptions   = `{"apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions","propagationPolicy":"Background"}`
	configMapObject = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"shop"}}`
)

// reviewOf is an admission.k8s.io/v1 AdmissionReview of a request in the
// shop namespace: kind and resource are group/version/name triples ("" for
// the core group), and object, oldObject and options raw JSON ("" leaves
// the field out).
func reviewOf(t *testing.T, op string, kind, resource [3]string, sub, object, oldObject, options string) []byte {
	t.Helper()
	req := map[string]any{
		"uid": "uid-1", "operation": op, "namespace": "shop", "name": "web", "subResource": sub,
		"kind":     map[string]string{"group": kind[0], "version": kind[1], "kind": kind[2]},
		"resource": map[string]string{"group": resource[0], "version": resource[1], "resource": resource[2]},
		"userInfo": map[string]any{"username": "alice"},
	}
	for field, raw := range map[string]string{"object": object, "oldObject": oldObject, "options": options} {
		if raw != "" {
			req[field] = json.RawMessage(raw)
		}
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	require.NoError(t, err)
	return b
}

var (
	podKind       = [3]string{"", "v1", "Pod"}
	podsResource  = [3]string{"", "v1", "pods"}
	deployments   = [3]string{"apps", "v1", "deployments"}
	configMapKind = [3]string{"", "v1", "ConfigMap"}
)

// A review that contradicts itself (its object is not of the kind or
// resource it names, its operation is not one, it lacks the objects its
// operation carries or has one its operation never carries) is answered
// 400, as other malformed reviews are: the API server then applies the
// webhook's failurePolicy instead of a verdict on a request no API server
// sent.
func TestContradictoryReviewsAreBadRequests(t *testing.T) {
	f := start(t, server.Config{})
	cases := map[string]struct {
		body []byte
		msg  string
	}{
		"request.kind ConfigMap, a Pod as the object": {reviewOf(t, "CREATE", configMapKind, [3]string{"", "v1", "configmaps"}, "", podObject, "", ""),
			"request.object is a v1 Pod, but request.kind is v1 ConfigMap: the API server sends the object in the group, version and kind of request.kind\n"},
		"request.resource deployments, request.kind and object Pod": {reviewOf(t, "CREATE", podKind, deployments, "", podObject, "", ""),
			"request.resource apps/v1 deployments holds apps/v1 Deployment objects, but request.kind is v1 Pod\n"},
		"request.resource deployments, request.kind Deployment, a Pod as the object": {reviewOf(t, "CREATE", [3]string{"apps", "v1", "Deployment"}, deployments, "", podObject, "", ""),
			"request.object is a v1 Pod, but request.kind is apps/v1 Deployment: the API server sends the object in the group, version and kind of request.kind\n"},
		"an old object of another kind": {reviewOf(t, "UPDATE", podKind, podsResource, "", podObject, configMapObject, ""),
			"request.oldObject is a v1 ConfigMap, but request.kind is v1 Pod: the API server sends the object in the group, version and kind of request.kind\n"},
		"an object in another version": {reviewOf(t, "CREATE", podKind, podsResource, "", `{"apiVersion":"v2","kind":"Pod"}`, "", ""),
			"request.object is a v2 Pod, but request.kind is v1 Pod: the API server sends the object in the group, version and kind of request.kind\n"},
		"operation BOGUS": {reviewOf(t, "BOGUS", podKind, podsResource, "", podObject, "", ""),
			`request.operation "BOGUS" is not an admission operation (CREATE, UPDATE, DELETE or CONNECT)` + "\n"},
		"no operation": {reviewOf(t, "", podKind, podsResource, "", podObject, "", ""),
			`request.operation "" is not an admission operation (CREATE, UPDATE, DELETE or CONNECT)` + "\n"},
		"CREATE without object": {reviewOf(t, "CREATE", podKind, podsResource, "", "", "", ""),
			"request.object is missing for CREATE: the API server sends the object being created\n"},
		"CREATE with an old object": {reviewOf(t, "CREATE", podKind, podsResource, "", podObject, podObject, ""),
			"request.oldObject is set for CREATE: the API server sends no old object when it creates one\n"},
		"UPDATE without oldObject": {reviewOf(t, "UPDATE", podKind, podsResource, "", podObject, "", ""),
			"request.oldObject is missing for UPDATE: the API server sends the object as it was before the update\n"},
		"UPDATE without object": {reviewOf(t, "UPDATE", podKind, podsResource, "", "", podObject, ""),
			"request.object is missing for UPDATE: the API server sends the object as the update leaves it\n"},
		"DELETE without oldObject": {reviewOf(t, "DELETE", podKind, podsResource, "", "", "", deleteOptions),
			"request.oldObject is missing for DELETE: the API server sends the object being deleted as request.oldObject\n"},
		"DELETE with an object": {reviewOf(t, "DELETE", podKind, podsResource, "", podObject, podObject, deleteOptions),
			"request.object is set for DELETE: the API server sends the object being deleted as request.oldObject, and request.object null\n"},
		"CONNECT with an old object": {reviewOf(t, "CONNECT", [3]string{"", "v1", "PodExecOptions"}, podsResource, "exec", execOptions, podObject, ""),
			"request.oldObject is set for CONNECT: the API server sends only the connect options, as request.object\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, data := f.post(t, "/validate", tc.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Equal(t, tc.msg, string(data))
		})
	}
}

// What a real API server sends is answered, where the object's kind is not
// the resource's: a subresource's own kind (Scale for deployments/scale,
// Eviction for pods/eviction, Pod for pods/status and
// pods/ephemeralcontainers), a CONNECT's options object (request.kind is
// the options' kind: PodExecOptions for pods/exec, PodProxyOptions for
// pods/proxy), a DELETE with the old object and DeleteOptions and no
// object.
func TestReviewsTheAPIServerSendsAreAnswered(t *testing.T) {
	f := start(t, server.Config{})
	cases := map[string]struct {
		body    []byte
		allowed bool
	}{
		"pods CREATE":                     {reviewOf(t, "CREATE", podKind, podsResource, "", podObject, "", ""), true},
		"pods UPDATE":                     {reviewOf(t, "UPDATE", podKind, podsResource, "", podObject, podObject, `{"apiVersion":"meta.k8s.io/v1","kind":"UpdateOptions"}`), true},
		"pods/status UPDATE":              {reviewOf(t, "UPDATE", podKind, podsResource, "status", podObject, podObject, ""), true},
		"pods/ephemeralcontainers UPDATE": {reviewOf(t, "UPDATE", podKind, podsResource, "ephemeralcontainers", podObject, podObject, ""), true},
		"deployments/scale UPDATE":        {reviewOf(t, "UPDATE", [3]string{"autoscaling", "v1", "Scale"}, deployments, "scale", scaleObject, scaleObject, ""), true},
		"pods/eviction CREATE":            {reviewOf(t, "CREATE", [3]string{"policy", "v1", "Eviction"}, podsResource, "eviction", evictionObject, "", ""), true},
		"pods/exec CONNECT":               {reviewOf(t, "CONNECT", [3]string{"", "v1", "PodExecOptions"}, podsResource, "exec", execOptions, "", ""), true},
		"pods/proxy CONNECT":              {reviewOf(t, "CONNECT", podKind, podsResource, "proxy", proxyOptions, "", ""), true},
		"pods DELETE":                     {reviewOf(t, "DELETE", podKind, podsResource, "", "", podObject, deleteOptions), true},
		"a custom resource":               {reviewOf(t, "CREATE", [3]string{"example.com", "v1", "Widget"}, [3]string{"example.com", "v1", "widgets"}, "", `{"apiVersion":"example.com/v1","kind":"Widget"}`, "", ""), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, data := f.post(t, "/validate", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
			assert.Equal(t, tc.allowed, decodeResponse(t, data).Allowed)
		})
	}
}
