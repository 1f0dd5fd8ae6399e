package server

import (
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/internal/apiresources"
)

// A review is checked against what the API server builds
// (k8s.io/apiserver admission/plugin/webhook/request CreateV1AdmissionReview,
// with the attributes of endpoints/handlers): request.kind is the group,
// version and kind of the object sent, converted to the version the
// webhook matched (a subresource's own kind: Scale for deployments/scale,
// Eviction for pods/eviction, Pod for pods/status; a CONNECT's options
// kind for pods/exec); request.resource of a request without subresource
// holds objects of that kind. CREATE carries the new object, UPDATE the new
// and the old, DELETE the old one only (with DeleteOptions in
// request.options), CONNECT the connect options (PodExecOptions) as the
// object. A review that says otherwise did not come from an API server,
// and a verdict on it would be a verdict on nothing the cluster does.

// objectsByOperation says which objects each operation carries.
var objectsByOperation = map[admissionv1.Operation]struct {
	object, oldObject presence
}{
	admissionv1.Create:  {object: required("the API server sends the object being created"), oldObject: forbidden("the API server sends no old object when it creates one")},
	admissionv1.Update:  {object: required("the API server sends the object as the update leaves it"), oldObject: required("the API server sends the object as it was before the update")},
	admissionv1.Delete:  {object: forbidden("the API server sends the object being deleted as request.oldObject, and request.object null"), oldObject: required("the API server sends the object being deleted as request.oldObject")},
	admissionv1.Connect: {object: optional(), oldObject: forbidden("the API server sends only the connect options, as request.object")},
}

// presence is whether an operation's review must, may or must not carry an
// object, and why.
type presence struct {
	need, allow bool
	why         string
}

func required(why string) presence  { return presence{need: true, allow: true, why: why} }
func forbidden(why string) presence { return presence{why: why} }
func optional() presence            { return presence{allow: true} }

// checkOperation refuses an operation that is not one and objects the
// operation never carries, or lacks.
func checkOperation(ar *admissionv1.AdmissionRequest, obj, old *unstructured.Unstructured) error {
	want, ok := objectsByOperation[ar.Operation]
	if !ok {
		return badRequest("request.operation %q is not an admission operation (CREATE, UPDATE, DELETE or CONNECT)", ar.Operation)
	}
	if err := checkPresence("request.object", ar.Operation, obj != nil, want.object); err != nil {
		return err
	}
	return checkPresence("request.oldObject", ar.Operation, old != nil, want.oldObject)
}

func checkPresence(field string, op admissionv1.Operation, present bool, p presence) error {
	switch {
	case p.need && !present:
		return badRequest("%s is missing for %s: %s", field, op, p.why)
	case !p.allow && present:
		return badRequest("%s is set for %s: %s", field, op, p.why)
	}
	return nil
}

// checkKinds refuses objects that are not of request.kind, and a
// request.kind that is not the kind request.resource holds (for a built-in
// resource without subresource; a subresource's objects have kinds of
// their own, and a custom resource's kind is not known here). A CONNECT's
// options object is left alone: its kind is the connecter's options kind
// (PodExecOptions for pods/exec), which only the serving API server knows,
// and a wrong 400 there would break kubectl exec under failurePolicy Fail.
func checkKinds(ar *admissionv1.AdmissionRequest, obj, old *unstructured.Unstructured) error {
	if ar.Operation == admissionv1.Connect {
		return nil
	}
	if err := checkResourceKind(ar); err != nil {
		return err
	}
	for _, o := range []struct {
		field string
		obj   *unstructured.Unstructured
	}{{"request.object", obj}, {"request.oldObject", old}} {
		if err := checkObjectKind(o.field, o.obj, ar.Kind); err != nil {
			return err
		}
	}
	return nil
}

// checkObjectKind refuses an object whose apiVersion or kind, where it
// has them, differ from request.kind's.
func checkObjectKind(field string, obj *unstructured.Unstructured, kind metav1.GroupVersionKind) error {
	if obj == nil || kind.Kind == "" {
		return nil
	}
	gvk := obj.GroupVersionKind()
	sameVersion := obj.GetAPIVersion() == "" || gvk.GroupVersion() == schema.GroupVersion{Group: kind.Group, Version: kind.Version}
	sameKind := gvk.Kind == "" || gvk.Kind == kind.Kind
	if sameVersion && sameKind {
		return nil
	}
	return badRequest("%s is a %s %s, but request.kind is %s %s: the API server sends the object in the group, version and kind of request.kind",
		field, obj.GetAPIVersion(), gvk.Kind, apiVersion(kind.Group, kind.Version), kind.Kind)
}

// checkResourceKind refuses a request.kind that is not the kind of the
// built-in request.resource (without subresource) in the same group and
// version.
func checkResourceKind(ar *admissionv1.AdmissionRequest) error {
	res, kind := ar.Resource, ar.Kind
	if ar.SubResource != "" || kind.Kind == "" || res.Resource == "" {
		return nil
	}
	r, ok := apiresources.ByResource(res.Group, res.Resource)
	if !ok {
		return nil
	}
	if kind.Kind == r.Kind && kind.Group == res.Group && kind.Version == res.Version {
		return nil
	}
	gv := apiVersion(res.Group, res.Version)
	return badRequest("request.resource %s %s holds %s %s objects, but request.kind is %s %s", gv, res.Resource, gv, r.Kind, apiVersion(kind.Group, kind.Version), kind.Kind)
}

// apiVersion writes a group and version as an object's apiVersion.
func apiVersion(group, version string) string {
	return schema.GroupVersion{Group: group, Version: version}.String()
}
