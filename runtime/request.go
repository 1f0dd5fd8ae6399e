package runtime

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitc/admitc/ir"
)

// Request is one admission request, as the API server would send it.
type Request struct {
	// UID is the request's uid (echoed in responses).
	UID string
	// Kind and Resource identify the object; Resource is derived from Kind when empty.
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	SubResource string
	Operation   ir.Operation
	Namespace   string
	Name        string
	// Object is the object being admitted (null on DELETE); OldObject is
	// set on UPDATE, and is the object being deleted on DELETE.
	Object    *unstructured.Unstructured
	OldObject *unstructured.Unstructured
	// NamespaceLabels are the labels of the request's namespace
	// (kubernetes.io/metadata.name is always added).
	NamespaceLabels map[string]string
	// Params are the parameter objects available to policies with paramKind.
	Params []*unstructured.Unstructured
	// Cluster, when set, is where namespaces and parameter objects are
	// read instead of NamespaceLabels and Params (the webhook's view of its
	// cluster).
	Cluster ClusterState
	User    user.Info
	DryRun  bool
	// Explain asks for Result.Trace.
	Explain bool
	// Offline asks for the policies' offline annotations (a Kyverno rule's
	// skip or no response), which the API server never evaluates (ir.Policy.OfflineAnnotations).
	Offline bool
}

// RequestFor builds a request for obj as `kubectl create` (or, with old, an
// update) in namespace would send it.
func RequestFor(obj, old *unstructured.Unstructured, namespace string) *Request {
	gvk := obj.GroupVersionKind()
	op := ir.Create
	if old != nil {
		op = ir.Update
	}
	if obj.GetNamespace() != "" {
		namespace = obj.GetNamespace()
	}
	if isClusterScoped(gvk) {
		namespace = ""
	}
	// The API server sets a namespaced object's metadata.namespace to the
	// request's namespace before admission, so policies read it there.
	obj = withNamespace(obj, namespace)
	old = withNamespace(old, namespace)
	return &Request{
		UID:       "admitc-test",
		Kind:      gvk,
		Resource:  ResourceFor(gvk),
		Operation: op,
		Namespace: namespace,
		Name:      obj.GetName(),
		Object:    obj,
		OldObject: old,
		User:      &user.DefaultInfo{Name: "admitc-test"},
	}
}

// DeleteRequestFor builds the request `kubectl delete` makes for the
// stored object obj in namespace, as the API server sends a DELETE: obj is
// the old object, the object is null, and the namespace and name are obj's.
func DeleteRequestFor(obj *unstructured.Unstructured, namespace string) *Request {
	req := RequestFor(obj, nil, namespace)
	req.Operation, req.Object, req.OldObject = ir.Delete, nil, req.Object
	return req
}

// isClusterScoped says whether objects of gvk have no namespace: the
// cluster-scoped kinds of Kubernetes, and of the policy engines admitc
// reads. Any other kind is taken as namespaced, as kubectl does for an
// unknown kind with a namespace.
func isClusterScoped(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "constraints.gatekeeper.sh" || clusterScoped[schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}]
}

var clusterScoped = map[schema.GroupKind]bool{}

func init() {
	for group, kinds := range map[string][]string{
		"":                             {"Namespace", "Node", "PersistentVolume", "ComponentStatus"},
		"rbac.authorization.k8s.io":    {"ClusterRole", "ClusterRoleBinding"},
		"admissionregistration.k8s.io": {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"},
		"apiextensions.k8s.io":         {"CustomResourceDefinition"},
		"apiregistration.k8s.io":       {"APIService"},
		"storage.k8s.io":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"},
		"scheduling.k8s.io":            {"PriorityClass"},
		"node.k8s.io":                  {"RuntimeClass"},
		"networking.k8s.io":            {"IngressClass", "IPAddress", "ServiceCIDR"},
		"certificates.k8s.io":          {"CertificateSigningRequest", "ClusterTrustBundle"},
		"flowcontrol.apiserver.k8s.io": {"FlowSchema", "PriorityLevelConfiguration"},
		"resource.k8s.io":              {"DeviceClass"},
		"kyverno.io":                   {"ClusterPolicy", "ClusterCleanupPolicy"},
		"policies.kyverno.io":          {"ValidatingPolicy", "MutatingPolicy", "GeneratingPolicy", "ImageValidatingPolicy", "DeletingPolicy"},
		"templates.gatekeeper.sh":      {"ConstraintTemplate"},
	} {
		for _, k := range kinds {
			clusterScoped[schema.GroupKind{Group: group, Kind: k}] = true
		}
	}
}

// withNamespace returns obj with metadata.namespace set to namespace when
// it names none (a copy; obj itself is not changed).
func withNamespace(obj *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	if obj == nil || namespace == "" || obj.GetNamespace() != "" {
		return obj
	}
	obj = obj.DeepCopy()
	obj.SetNamespace(namespace)
	return obj
}

// ResourceFor returns the REST resource serving gvk (see ir.ResourceForKind).
func ResourceFor(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	return gvk.GroupVersion().WithResource(ir.ResourceForKind(gvk.Group, gvk.Kind))
}

// clusterState is where req's namespaces and parameter objects are read:
// req.Cluster, else a StaticState of req.NamespaceLabels and req.Params.
func (req *Request) clusterState() ClusterState {
	if req.Cluster != nil {
		return req.Cluster
	}
	s := &StaticState{ParamObjects: req.Params}
	if req.Namespace != "" {
		s.NamespaceLabels = map[string]map[string]string{req.Namespace: req.NamespaceLabels}
	}
	return s
}
