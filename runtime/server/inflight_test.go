package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

func exampleEngine(t testing.TB) *runtime.Engine {
	src, err := compiler.ReadSources([]string{"../../examples/policies/policies.json"})
	require.NoError(t, err)
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	return e
}

func TestReviewWithoutAFreeSlotBeforeItsDeadlineIs429(t *testing.T) {
	s := New(Config{MaxInflight: 1, Engine: exampleEngine(t)})
	body, err := os.ReadFile("../../examples/reviews/review-pod.json")
	require.NoError(t, err)
	s.slots <- struct{}{} // a review that never ends holds the only slot

	rec := httptest.NewRecorder()
	start := time.Now()
	s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate?timeout=200ms", bytes.NewReader(body)))
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "too many reviews in flight: no evaluation slot of 1 freed before the review's deadline (raise --max-inflight or add replicas); "+
		"the API server applies the webhook's failurePolicy\n", rec.Body.String())
	assert.InDelta(t, 180*time.Millisecond, time.Since(start), float64(150*time.Millisecond), "the wait ends at the review's deadline (timeout less 10%)")

	<-s.slots // the slot frees: reviews are answered again
	rec = httptest.NewRecorder()
	s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate?timeout=2s", bytes.NewReader(body)))
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Empty(t, s.slots, "the slot is given back")
}

func TestReviewWaitsForASlotAtMostMaxQueueWait(t *testing.T) {
	s := New(Config{MaxInflight: 1, MaxQueueWait: 50 * time.Millisecond, Engine: exampleEngine(t)})
	body, err := os.ReadFile("../../examples/reviews/review-pod.json")
	require.NoError(t, err)
	s.slots <- struct{}{} // a review that never ends holds the only slot

	rec := httptest.NewRecorder()
	start := time.Now()
	s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate?timeout=10s", bytes.NewReader(body)))
	waited := time.Since(start)
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "too many reviews in flight: no evaluation slot of 1 freed within 50ms (--max-queue-wait; raise --max-inflight or add replicas); "+
		"the API server applies the webhook's failurePolicy\n", rec.Body.String())
	assert.Less(t, waited, 2*time.Second, "answered long before the review's 10 s deadline")
	assert.GreaterOrEqual(t, waited, 50*time.Millisecond)
}

func TestReviewBeyondTheQueueIs429AtOnce(t *testing.T) {
	s := New(Config{MaxInflight: 1, MaxQueued: 1, Engine: exampleEngine(t)})
	body, err := os.ReadFile("../../examples/reviews/review-pod.json")
	require.NoError(t, err)
	s.admitted <- struct{}{} // one review evaluating,
	s.admitted <- struct{}{} // one waiting: the queue is full

	rec := httptest.NewRecorder()
	start := time.Now()
	s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate?timeout=10s", bytes.NewReader(body)))
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "too many reviews in flight: 1 evaluating and 1 waiting (--max-inflight, --max-queued; raise them or add replicas); "+
		"the API server applies the webhook's failurePolicy\n", rec.Body.String())
	assert.Less(t, time.Since(start), time.Second, "no wait")

	<-s.admitted // one leaves: the next review is answered
	rec = httptest.NewRecorder()
	s.http.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body)))
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Len(t, s.admitted, 1, "its token is given back")
}
