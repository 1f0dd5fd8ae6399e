// Command load is admitc's load generator: it replays AdmissionReviews over
// keep-alive TLS at a fixed rate (open loop: latency counts from the
// scheduled send time, so a slow server cannot hide its queue) against
// loopback targets only, and reports throughput, latency percentiles, errors
// and, given a PID, the server's resident memory at start and end.
//
//	load echo -addr 127.0.0.1:9443 -cert tls.crt -key tls.key   # the baseline server
//	load run -url https://127.0.0.1:8443/validate -ca ca.crt -review r.json -rate 2000 -duration 10s
//	load ramp -ca ca.crt -review r.json -target baseline=https://127.0.0.1:9443/validate \
//	    -target validate=https://127.0.0.1:8443/validate
//
// ramp raises the rate step by step, every target in turn at each step (so
// the machine's noise falls on all alike), until no target holds p99 within
// the bound with zero errors; it prints, per target, the highest rate it
// sustained and p50/p99 at 1,000/s and 2,000/s, and the ratios to the first
// target (the baseline).
//
// Runs are bounded: at most 20,000 reviews/s and 120 s per step.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: load echo|run|ramp [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "echo":
		err = echo(os.Args[2:])
	case "run":
		err = runLoad(os.Args[2:])
	case "ramp":
		err = ramp(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (echo, run or ramp)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

// echo serves a stdlib HTTPS handler that decodes the review and answers
// allowed with its uid: the cost of TLS, HTTP and JSON without any policy.
func echo(args []string) error {
	fs := flag.NewFlagSet("echo", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9443", "loopback address to listen on")
	cert := fs.String("cert", "", "serving certificate")
	key := fs.String("key", "", "serving key")
	_ = fs.Parse(args)
	if err := loopback(*addr); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID    string          `json:"uid"`
				Object json.RawMessage `json:"object"`
			} `json:"request"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 3<<20)).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var obj map[string]any
		_ = json.Unmarshal(review.Request.Object, &obj)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.Request.UID)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	return srv.ListenAndServeTLS(*cert, *key)
}

func loopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("refusing %s: the load generator only targets loopback addresses", hostport)
	}
	return nil
}

type config struct {
	url, ca, review, name string
	rate                  int
	duration              time.Duration
	conns, pid            int
	// overload expects answers other than 200 (429 when no evaluation slot
	// frees before a review's deadline) and judges latency by maxP99 instead.
	overload bool
	maxP99   time.Duration
	maxRSS   int
	// every is how often the timeline is printed (0: never); metrics is
	// the server's /metrics URL, read for its goroutines; tls reaches it.
	every   time.Duration
	metrics string
	tls     *tls.Config
}

func runLoad(args []string) error {
	var c config
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	fs.StringVar(&c.url, "url", "", "https URL on a loopback address")
	fs.StringVar(&c.ca, "ca", "", "CA certificate of the server")
	fs.StringVar(&c.review, "review", "", "AdmissionReview JSON file to replay")
	fs.StringVar(&c.name, "name", "target", "name for the report line")
	fs.IntVar(&c.rate, "rate", 1000, "reviews per second (at most 20000)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send (at most 120s)")
	fs.IntVar(&c.conns, "conns", 16, "keep-alive connections")
	fs.IntVar(&c.pid, "pid", 0, "server process to sample resident memory of")
	fs.BoolVar(&c.overload, "overload", false, "above capacity: count answers by status, fail only on transport errors or a p99 above -max-p99")
	fs.DurationVar(&c.maxP99, "max-p99", 0, "with -overload, the p99 the server must keep from a review written to its answer (its answers come by the review's deadline)")
	fs.IntVar(&c.maxRSS, "max-rss", 0, "with -overload, the RSS (MiB) the server must stay under (0: no bound)")
	fs.DurationVar(&c.every, "every", 0, "print RSS, goroutines and goodput every interval (0: never)")
	fs.StringVar(&c.metrics, "metrics", "", "the server's /metrics URL, for its goroutines in the timeline")
	_ = fs.Parse(args)
	if c.rate <= 0 || c.rate > 20000 || c.duration <= 0 || c.duration > 120*time.Second {
		return errors.New("-rate must be 1..20000 and -duration at most 120s")
	}
	u, err := url.Parse(c.url)
	if err != nil || u.Scheme != "https" {
		return fmt.Errorf("-url must be https, got %q", c.url)
	}
	if err := loopback(u.Host); err != nil {
		return err
	}
	body, err := os.ReadFile(c.review)
	if err != nil {
		return err
	}
	client, err := newClient(c.ca, c.conns)
	if err != nil {
		return err
	}
	c.tls = client.Transport.(*http.Transport).TLSClientConfig
	warm(client, c.url, body, c.conns)
	rssStart := rss(c.pid)
	r := fire(client, c, body)
	r.rssStart, r.rssEnd = rssStart, rss(c.pid)
	fmt.Println(r.String(c))
	if c.overload {
		summary, failures := r.overloadSummary(c)
		fmt.Println(summary)
		if len(failures) > 0 {
			fmt.Printf("overload: FAIL: %s\n", strings.Join(failures, "; "))
			os.Exit(1)
		}
		return nil
	}
	if r.non2xx > 0 || r.errors > 0 {
		os.Exit(1)
	}
	return nil
}

func newClient(caFile string, conns int) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: 60 * time.Second,
		// The API server calls webhooks over HTTP/2, many reviews at once
		// on one connection; so does the load generator.
		ForceAttemptHTTP2: true,
	}}, nil
}

type result struct {
	sent, ok, non2xx, errors int
	byStatus                 map[int]int
	latencies                []time.Duration
	// serverLatencies run from a review written to its answer.
	serverLatencies  []time.Duration
	errorKinds       map[string]int
	elapsed          time.Duration
	rssStart, rssEnd int
	// rssSamples is the server's RSS (KiB) once a second during the run.
	rssSamples []int
}

// fire sends at a fixed rate for the duration; each request's latency runs
// from its scheduled time to the end of its response.
func fire(client *http.Client, c config, body []byte) *result {
	total := int(c.duration.Seconds() * float64(c.rate))
	interval := time.Second / time.Duration(c.rate)
	jobs := make(chan time.Time, total)
	r := &result{latencies: make([]time.Duration, 0, total), byStatus: map[int]int{}, errorKinds: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var win window
	// Enough senders for the rate: a slow server must not slow the sending
	// down (open loop). Above capacity, a second's worth of reviews may be
	// in flight at once, as an API server's many callers would have them.
	workers := c.conns * 4
	if c.overload {
		workers = max(workers, c.rate)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for scheduled := range jobs {
				if d := time.Until(scheduled); d > 0 {
					time.Sleep(d)
				}
				o := send(client, c.url, body)
				code, err := o.code, o.err
				lat := o.end.Sub(scheduled)
				win.add(code, err)
				mu.Lock()
				if err == nil {
					r.byStatus[code]++
				}
				if !o.wrote.IsZero() && err == nil {
					r.serverLatencies = append(r.serverLatencies, o.end.Sub(o.wrote))
				}
				switch {
				case err != nil:
					r.errors++
					kind := o.errorKind()
					if r.errorKinds[kind] == 0 {
						fmt.Fprintf(os.Stderr, "%s: first %s error: %v\n", c.name, kind, err)
					}
					r.errorKinds[kind]++
				case code/100 != 2:
					r.non2xx++
				default:
					r.ok++
				}
				r.latencies = append(r.latencies, lat)
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	stopSampling := make(chan struct{})
	sampled := make(chan []int)
	go func() { sampled <- timeline(c, &win, stopSampling) }()
	for i := 0; i < total; i++ {
		jobs <- start.Add(time.Duration(i) * interval)
	}
	r.sent = total
	close(jobs)
	wg.Wait()
	r.elapsed = time.Since(start)
	close(stopSampling)
	r.rssSamples = <-sampled
	return r
}

func (r *result) percentile(p float64) time.Duration { return percentileOf(r.latencies, p) }

// percentileOf sorts ds and returns its p-th percentile (0 when empty).
func percentileOf(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	idx := int(p/100*float64(len(ds))+0.5) - 1
	idx = max(0, min(idx, len(ds)-1))
	return ds[idx]
}

func (r *result) String(c config) string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
	line := fmt.Sprintf("%-8s rate=%d/s sent=%d ok=%d non2xx=%d errors=%d throughput=%.0f/s p50=%sms p95=%sms p99=%sms max=%sms",
		c.name, c.rate, r.sent, r.ok, r.non2xx, r.errors, float64(r.ok)/r.elapsed.Seconds(),
		ms(r.percentile(50)), ms(r.percentile(95)), ms(r.percentile(99)), ms(r.percentile(100)))
	if r.non2xx > 0 {
		codes := make([]int, 0, len(r.byStatus))
		for code := range r.byStatus {
			codes = append(codes, code)
		}
		sort.Ints(codes)
		for _, code := range codes {
			line += fmt.Sprintf(" status_%d=%d", code, r.byStatus[code])
		}
	}
	if c.pid > 0 {
		line += fmt.Sprintf(" rss_start=%dMiB rss_end=%dMiB", r.rssStart/1024, r.rssEnd/1024)
		if c.overload && len(r.rssSamples) > 0 {
			mib := make([]string, len(r.rssSamples))
			for i, k := range r.rssSamples {
				mib[i] = strconv.Itoa(k / 1024)
			}
			line += " rss_per_second_MiB=" + strings.Join(mib, ",")
		}
	}
	return line
}

// rss returns the resident set size of pid in KiB (0 when unknown).
func rss(pid int) int {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	return 0
}
