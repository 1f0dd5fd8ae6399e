package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/runtime/server"
)

// hugePodReview is a CREATE review of a pod with n minimal containers: the
// issue #14 probe used n = 40,000 (1.2 MB).
func hugePodReview(t testing.TB, n int) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"huge","kind":{"group":"","version":"v1","kind":"Pod"},` +
		`"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"shop","name":"huge","operation":"CREATE","userInfo":{"username":"alice"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"huge","namespace":"shop","labels":{"team":"a"}},"spec":{"containers":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"c%d","image":"nginx"}`, i)
	}
	b.WriteString(`]}}}}`)
	return []byte(b.String())
}

// answer is one review's outcome.
type answer struct {
	code    int
	body    string
	elapsed time.Duration
	err     error
}

func (f *fixture) send(path string, body []byte) answer {
	start := time.Now()
	resp, err := f.client.Post("https://"+f.addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return answer{code: resp.StatusCode, body: buf.String(), elapsed: time.Since(start)}
}

// sendConcurrently sends body n times at once to path and returns the answers.
func (f *fixture) sendConcurrently(n int, path string, body []byte) []answer {
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = f.send(path, body) })
	}
	wg.Wait()
	return out
}

func TestHugeReviewsDoNotStarveASmallOne(t *testing.T) {
	f := start(t, server.Config{MaxInflight: 2})
	huge := hugePodReview(t, 40_000)
	small := review(t, "manifests/good.json", "", "")
	hugeAnswers := make(chan []answer, 1)
	// timeout=5s is what the API server sends for admitc's webhook configuration.
	go func() { hugeAnswers <- f.sendConcurrently(16, "/validate?timeout=5s", huge) }()
	time.Sleep(50 * time.Millisecond) // the huge reviews are on their way

	a := f.send("/validate", small)
	require.NoError(t, a.err)
	assert.Equal(t, http.StatusOK, a.code, a.body)
	assert.Contains(t, a.body, `"allowed":true`)
	assert.Less(t, a.elapsed, 2*time.Second, "the small review waited behind the huge ones")

	refused := 0
	for _, h := range <-hugeAnswers {
		require.NoError(t, h.err)
		assert.Less(t, h.elapsed, 6*time.Second, "a huge review is answered by its deadline")
		switch h.code {
		case http.StatusRequestEntityTooLarge:
			refused++
			assert.Equal(t, "request.object.spec.containers has 40000 items, more than the 1000 admitc evaluates (--max-list-items): "+
				"policy evaluation time grows with the square of a list's length\n", h.body)
		default:
			assert.Equal(t, http.StatusTooManyRequests, h.code, "a huge review is refused or finds no slot, never evaluated: %s", h.body)
		}
	}
	assert.Positive(t, refused)
}

func TestListBoundIsConfigurable(t *testing.T) {
	f := start(t, server.Config{MaxListItems: 2})
	a := f.send("/validate", hugePodReview(t, 3))
	assert.Equal(t, http.StatusRequestEntityTooLarge, a.code)
	assert.Equal(t, "request.object.spec.containers has 3 items, more than the 2 admitc evaluates (--max-list-items): "+
		"policy evaluation time grows with the square of a list's length\n", a.body)
	a = f.send("/validate", hugePodReview(t, 2))
	assert.Equal(t, http.StatusOK, a.code, a.body)
}

// peakRSS is the process's peak resident set (VmHWM) in MiB.
func peakRSS(t testing.TB) int {
	data, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	return 0
}

// TestProbeHugeReviews is issue #14's probe: 40 concurrent reviews of a
// 1.2 MB pod with 40,000 containers on loopback, to both endpoints. It
// reports times and peak RSS; run it by hand:
//
//	ADMITC_PROBE=1 go test ./runtime/server -run TestProbeHugeReviews -v
func TestProbeHugeReviews(t *testing.T) {
	if os.Getenv("ADMITC_PROBE") == "" {
		t.Skip("set ADMITC_PROBE=1 to run the probe")
	}
	f := start(t, server.Config{})
	body := hugePodReview(t, 40_000)
	t.Logf("review body: %d bytes", len(body))
	for _, path := range []string{"/validate", "/mutate"} {
		one := f.send(path, body)
		t.Logf("%s: one review: %d in %v (%d bytes answered)", path, one.code, one.elapsed, len(one.body))
		start := time.Now()
		answers := f.sendConcurrently(40, path, body)
		codes := map[int]int{}
		var slowest time.Duration
		for _, a := range answers {
			require.NoError(t, a.err)
			codes[a.code]++
			slowest = max(slowest, a.elapsed)
		}
		t.Logf("%s: 40 at once: all answered in %v (slowest %v), codes %v, peak RSS %d MiB", path, time.Since(start), slowest, codes, peakRSS(t))
	}
}
