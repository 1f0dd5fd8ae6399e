package ir

import "testing"

func TestResourceForKind(t *testing.T) {
	cases := map[string]string{
		"Pod": "pods", "Ingress": "ingresses", "NetworkPolicy": "networkpolicies", "Endpoints": "endpoints",
		"Gateway": "gateways", "StorageClass": "storageclasses", "Mesh": "meshes", "PriorityClass": "priorityclasses",
		"HTTPRoute": "httproutes", "Box": "boxes",
	}
	for kind, want := range cases {
		if got := ResourceForKind("example.com", kind); got != want {
			t.Errorf("ResourceForKind(%q) = %q, want %q", kind, got, want)
		}
	}
}
