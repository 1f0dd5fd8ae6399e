package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// window counts the answers that completed in one reporting interval.
type window struct {
	mu              sync.Mutex
	ok, non2xx, err int
}

func (w *window) add(code int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.err++
	case code/100 != 2:
		w.non2xx++
	default:
		w.ok++
	}
}

// take returns the counts and starts a new interval.
func (w *window) take() (ok, non2xx, errs int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok, non2xx, errs = w.ok, w.non2xx, w.err
	w.ok, w.non2xx, w.err = 0, 0, 0
	return ok, non2xx, errs
}

// timeline samples the server's RSS once a second and, every c.every,
// prints a line to stderr: elapsed time, RSS, the server's goroutines (read
// from c.metrics) and the answers of the interval, the 2xx ones per second
// as goodput; goroutines are read in the background, the last value
// printed. It returns the per-second samples once stop is closed.
func timeline(c config, w *window, stop <-chan struct{}) []int {
	var samples []int
	var scraped atomic.Value
	scraped.Store("-")
	go func() {
		for c.every > 0 && c.metrics != "" {
			select {
			case <-stop:
				return
			case <-time.After(c.every / 2):
				scraped.Store(goroutines(c))
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start, last := time.Now(), time.Now()
	for {
		select {
		case <-stop:
			return samples
		case <-tick.C:
		}
		samples = append(samples, rss(c.pid))
		if c.every <= 0 || time.Since(last) < c.every-100*time.Millisecond {
			continue
		}
		ok, non2xx, errs := w.take()
		secs := time.Since(last).Seconds()
		last = time.Now()
		fmt.Fprintf(os.Stderr, "%-8s t=%3.0fs rss=%dMiB goroutines/conns/shed=%s goodput=%.0f/s non2xx=%.0f/s errors=%.0f/s\n",
			c.name, time.Since(start).Seconds(), samples[len(samples)-1]/1024, scraped.Load(),
			float64(ok)/secs, float64(non2xx)/secs, float64(errs)/secs)
	}
}

// goroutines reads go_goroutines from the server's Prometheus endpoint, on
// a connection of its own ("-" when it cannot: no URL, or the server shed
// the scrape).
func goroutines(c config) string {
	if c.metrics == "" {
		return "-"
	}
	// The load's TLS configuration offers h2 (its transport added it); this
	// client speaks HTTP/1.1.
	tlsCfg := c.tls.Clone()
	tlsCfg.NextProtos = nil
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
	resp, err := client.Get(c.metrics)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scrape:", err)
		return "-"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []string
	for sc.Scan() {
		for _, name := range []string{"go_goroutines", "admitc_connections_open", "admitc_connections_shed_total"} {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					out = append(out, strconv.Itoa(int(f)))
				}
			}
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, "/")
}

// overloadSummary is the verdict of an overload run: goodput, the
// server's latency (from a review written to its answer), the time reviews
// waited in the client for a connection or stream, transport errors by
// kind, the server's peak RSS; and what failed its bounds: an answer slower
// than c.maxP99, a review written and never answered, RSS over c.maxRSS.
func (r *result) overloadSummary(c config) (string, []string) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
	peak := 0
	for _, k := range r.rssSamples {
		peak = max(peak, k/1024)
	}
	kinds := make([]string, 0, len(r.errorKinds))
	for k, n := range r.errorKinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	line := fmt.Sprintf("%-8s goodput=%.0f/s server_p50=%sms server_p99=%sms errors_by_kind=[%s] rss_peak=%dMiB", c.name,
		float64(r.ok)/r.elapsed.Seconds(), ms(percentileOf(r.serverLatencies, 50)), ms(percentileOf(r.serverLatencies, 99)),
		strings.Join(kinds, " "), peak)
	var failures []string
	if p99 := percentileOf(r.serverLatencies, 99); c.maxP99 > 0 && p99 > c.maxP99 {
		failures = append(failures, fmt.Sprintf("server p99 %v over %v", p99, c.maxP99))
	}
	if n := r.errorKinds["unanswered"]; n > 0 {
		failures = append(failures, fmt.Sprintf("%d reviews written and never answered", n))
	}
	if c.maxRSS > 0 && c.pid > 0 && peak > c.maxRSS {
		failures = append(failures, fmt.Sprintf("RSS peaked at %d MiB, over %d MiB", peak, c.maxRSS))
	}
	return line, failures
}
