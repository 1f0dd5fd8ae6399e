package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// BenchmarkReview is one review of the example pod through the HTTP
// handler (decode, match, evaluate, encode; no TLS), per phase: the
// server's own cost per review, which the load runs see plus TLS and HTTP.
func BenchmarkReview(b *testing.B) {
	body, err := os.ReadFile("../../examples/reviews/review-pod.json")
	if err != nil {
		b.Fatal(err)
	}
	s := New(Config{Engine: exampleEngine(b)})
	for _, path := range []string{"/validate", "/mutate"} {
		b.Run(path[1:], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}
