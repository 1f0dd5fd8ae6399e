package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
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
		fmt.Fprintf(os.Stderr, "%-8s t=%3.0fs rss=%dMiB goroutines=%s goodput=%.0f/s non2xx=%.0f/s errors=%.0f/s\n",
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
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c.tls, DisableKeepAlives: true}}
	resp, err := client.Get(c.metrics)
	if err != nil {
		return "-"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return strconv.Itoa(int(f))
			}
		}
	}
	return "-"
}
