package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// MaxBodyBytes bounds an AdmissionReview body (the API server's own limit
// for webhook payloads is 3 MiB).
const MaxBodyBytes = 3 << 20

// Phase is the admission phase an endpoint serves.
type Phase string

const (
	// PhaseValidate is /validate.
	PhaseValidate Phase = "validate"
	// PhaseMutate is /mutate.
	PhaseMutate Phase = "mutate"
)

// httpError is a review that cannot be answered: the API server applies the
// webhook's failurePolicy.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) *httpError {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// readBody reads a POSTed body of at most MaxBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	if r.Method != http.MethodPost {
		return nil, &httpError{code: http.StatusMethodNotAllowed, msg: "admission reviews are POSTed"}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, badRequest("read body: %v", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, &httpError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("body larger than %d bytes", MaxBodyBytes)}
	}
	return body, nil
}

// decodeReview decodes and checks one admission.k8s.io/v1 AdmissionReview.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, badRequest("body is not an AdmissionReview: %v", err)
	}
	switch {
	case review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview":
		return nil, badRequest("expected apiVersion admission.k8s.io/v1, kind AdmissionReview; got %q %q (set admissionReviewVersions: [v1])", review.APIVersion, review.Kind)
	case review.Request == nil:
		return nil, badRequest("AdmissionReview has no request")
	case review.Request.UID == "":
		return nil, badRequest("AdmissionReview request has no uid")
	}
	return &review, nil
}

// toRequest turns an AdmissionRequest into the runtime's request, reading
// the cluster from state, refusing objects with a list longer than
// maxListItems and reviews that contradict themselves (checkOperation,
// checkKinds).
func toRequest(ar *admissionv1.AdmissionRequest, state runtime.ClusterState, maxListItems int) (*runtime.Request, error) {
	obj, err := decodeObject(ar.Object.Raw, field.NewPath("request", "object"), maxListItems)
	if err != nil {
		return nil, err
	}
	old, err := decodeObject(ar.OldObject.Raw, field.NewPath("request", "oldObject"), maxListItems)
	if err != nil {
		return nil, err
	}
	if err := checkOperation(ar, obj, old); err != nil {
		return nil, err
	}
	if err := checkKinds(ar, obj, old); err != nil {
		return nil, err
	}
	req := &runtime.Request{
		UID:         string(ar.UID),
		Kind:        schema.GroupVersionKind(ar.Kind),
		Resource:    schema.GroupVersionResource(ar.Resource),
		SubResource: ar.SubResource,
		Operation:   ir.Operation(ar.Operation),
		Namespace:   ar.Namespace,
		Name:        ar.Name,
		Object:      obj,
		OldObject:   old,
		User:        &user.DefaultInfo{Name: ar.UserInfo.Username, UID: ar.UserInfo.UID, Groups: ar.UserInfo.Groups},
		DryRun:      ar.DryRun != nil && *ar.DryRun,
		Cluster:     state,
	}
	return req, nil
}

// decodeObject decodes the raw object at path with integers as int64, as
// the API server's own decoding gives CEL, and checks its list sizes.
func decodeObject(raw []byte, path *field.Path, maxListItems int) (*unstructured.Unstructured, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, badRequest("%s: %v", path, err)
	}
	if m == nil {
		return nil, nil
	}
	if err := checkListSizes(m, path, maxListItems); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// reviewDeadline derives a context deadline from the timeout query
// parameter the API server sends (?timeout=5s), leaving a margin for the
// response to travel back; without one it uses fallback.
func reviewDeadline(ctx context.Context, r *http.Request, fallback time.Duration) (context.Context, context.CancelFunc) {
	d := fallback
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		d = t - t/10
	}
	return context.WithTimeout(ctx, d)
}

// decide runs one review through the engine.
func decide(ctx context.Context, e *runtime.Engine, phase Phase, req *runtime.Request) (*runtime.Result, error) {
	var res *runtime.Result
	var err error
	if phase == PhaseMutate {
		res, err = e.Mutate(ctx, req)
	} else {
		res, err = e.Validate(ctx, req)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil, &httpError{code: http.StatusServiceUnavailable, msg: "review deadline exceeded"}
	}
	return res, err
}
