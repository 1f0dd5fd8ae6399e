package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

// FuzzReview posts arbitrary bodies to /validate and /mutate: the answer is
// always 200 with a v1 AdmissionReview echoing the uid, or a 4xx/503 with a
// message, never a panic or a 500.
func FuzzReview(f *testing.F) {
	src, err := compiler.ReadSources([]string{"../../examples/policies/policies.json"})
	if err != nil {
		f.Fatal(err)
	}
	set, diags := compiler.Compile(src, compiler.Options{})
	if len(diags) > 0 {
		f.Fatal(diags)
	}
	e, err := runtime.NewEngine(set)
	if err != nil {
		f.Fatal(err)
	}
	s := New(Config{Engine: e})
	if seed, err := os.ReadFile("../../examples/reviews/review-pod.json"); err == nil {
		f.Add(seed)
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"DELETE"}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"CREATE","object":{"kind":"Pod","spec":{"containers":[{"name":1}]}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"BOGUS","object":{"kind":"Pod"}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","operation":"UPDATE","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"object":{"apiVersion":"v1","kind":"Pod"},"oldObject":{"apiVersion":"v1","kind":"Pod"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/validate", "/mutate"} {
			rec := httptest.NewRecorder()
			s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			switch rec.Code {
			case http.StatusOK:
				var review struct {
					APIVersion string `json:"apiVersion"`
					Response   *struct {
						UID string `json:"uid"`
					} `json:"response"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil || review.APIVersion != "admission.k8s.io/v1" {
					t.Fatalf("%s: 200 without a v1 review: %s", path, rec.Body.String())
				}
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusServiceUnavailable:
				if rec.Body.Len() == 0 {
					t.Fatalf("%s: %d without a message", path, rec.Code)
				}
			default:
				t.Fatalf("%s: unexpected status %d: %s", path, rec.Code, rec.Body.String())
			}
		}
	})
}
