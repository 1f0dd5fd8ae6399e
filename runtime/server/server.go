package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	goruntime "runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/admitc/admitc/runtime"
)

// Config configures a Server.
type Config struct {
	// Engine is the initial policy set; Swap replaces it.
	Engine *runtime.Engine
	// Certs serves the TLS certificate (reloadable).
	Certs *CertSource
	// ClientCAs, when set, requires and verifies client certificates.
	ClientCAs *CertPool
	// Cluster is where namespaces and parameter objects are read (nil:
	// every namespace exists, labelled with its name only, and there are no
	// parameter objects). The server is ready only once it has synced.
	Cluster runtime.ClusterState
	Logger  *slog.Logger
	Metrics *Metrics
	// ReviewTimeout bounds a review when the API server sends no timeout.
	ReviewTimeout time.Duration
	// ReadHeaderTimeout and IdleTimeout cut off slow and idle clients
	// (defaults 5s and 90s).
	ReadHeaderTimeout, IdleTimeout time.Duration
	// MaxInflight bounds the reviews decoded and evaluated at once (default
	// GOMAXPROCS); a review that finds no free slot before its deadline is
	// answered 429, so the API server applies the webhook's failurePolicy.
	MaxInflight int
	// MaxQueueWait bounds how long a review waits for a slot (default
	// DefaultMaxQueueWait), however far its deadline is: past capacity the
	// API server gets a fast 429 and applies the failure policy, instead of
	// holding its request until the webhook's timeout while the queue grows.
	MaxQueueWait time.Duration
	// MaxQueued bounds the reviews waiting for a slot (default
	// DefaultQueuePerSlot per slot); one more is answered 429 at once,
	// before its body is read, so past capacity memory stays flat.
	MaxQueued int
	// MaxListItems is the longest list an object may hold to be evaluated
	// (default DefaultMaxListItems); a longer one is answered 413.
	MaxListItems int
	// MaxConnections bounds the connections open at once (default
	// DefaultMaxConnections); one more is closed as soon as it is
	// accepted. MaxConcurrentStreams bounds the reviews one HTTP/2
	// connection carries at once (default DefaultMaxConcurrentStreams):
	// together they bound the requests the webhook holds, whatever arrives.
	MaxConnections, MaxConcurrentStreams int
}

// Server is the admission webhook.
type Server struct {
	cfg    Config
	engine atomic.Pointer[runtime.Engine]
	ready  atomic.Bool
	http   *http.Server
	// inflight counts reviews being answered, for the log.
	inflight atomic.Int64
	// slots holds one token per review being decoded or evaluated;
	// largeSlots one per review of a body over LargeBodyBytes.
	slots, largeSlots chan struct{}
	// admitted holds one token per review being read, waiting for a slot
	// or evaluated: MaxInflight + MaxQueued at most.
	admitted chan struct{}
	// open holds one token per open connection: MaxConnections at most.
	open chan struct{}
	// conns knows which connections are new or serving a request: the
	// drain waits for none to be left.
	conns    connTracker
	listener atomic.Pointer[net.Listener]
	// closing is set when the drain starts: every answer from then on
	// closes its connection. draining is set when the listener closes.
	closing, draining atomic.Bool
}

// New returns a server for cfg; call Serve to start it.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, slots: make(chan struct{}, cfg.MaxInflight), largeSlots: make(chan struct{}, 1),
		admitted: make(chan struct{}, cfg.MaxInflight+cfg.MaxQueued), open: make(chan struct{}, cfg.MaxConnections)}
	s.engine.Store(cfg.Engine)
	_ = cfg.Metrics.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "admitc_connections_open", Help: "Connections open, at most --max-connections.",
	}, func() float64 { return float64(len(s.open)) }))
	s.http = &http.Server{
		Handler:           s.closeWhileDraining(s.routes()),
		TLSConfig:         tlsConfig(cfg),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      35 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		ConnState:         s.conns.track,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: cfg.MaxConcurrentStreams,
			CountError:           func(errType string) { cfg.Metrics.HTTP2Errors.WithLabelValues(errType).Inc() },
		},
	}
	return s
}

// withDefaults fills in the zero fields of cfg.
func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	cfg.ReviewTimeout = orDefault(cfg.ReviewTimeout, 10*time.Second)
	cfg.ReadHeaderTimeout = orDefault(cfg.ReadHeaderTimeout, 5*time.Second)
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, 90*time.Second)
	cfg.MaxQueueWait = orDefault(cfg.MaxQueueWait, DefaultMaxQueueWait)
	cfg.MaxListItems = orDefault(cfg.MaxListItems, DefaultMaxListItems)
	cfg.MaxInflight = orDefault(cfg.MaxInflight, goruntime.GOMAXPROCS(0))
	cfg.MaxQueued = orDefault(cfg.MaxQueued, DefaultQueuePerSlot*cfg.MaxInflight)
	cfg.MaxConnections = orDefault(cfg.MaxConnections, DefaultMaxConnections)
	cfg.MaxConcurrentStreams = orDefault(cfg.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	return cfg
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// routes are the webhook's endpoints.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/validate", s.reviewHandler(PhaseValidate))
	mux.Handle("/mutate", s.reviewHandler(PhaseMutate))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	mux.HandleFunc("/readyz", s.readyz)
	mux.Handle("/metrics", promhttp.HandlerFor(s.cfg.Metrics.Registry, promhttp.HandlerOpts{}))
	return mux
}

// tlsConfig serves cfg's certificate, and checks client certificates when
// cfg has client CAs.
func tlsConfig(cfg Config) *tls.Config {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cfg.Certs.GetCertificate}
	if cfg.ClientCAs != nil {
		tlsCfg.ClientAuth = tls.RequireAndVerifyClientCert
		tlsCfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := tlsCfg.Clone()
			c.GetConfigForClient = nil
			c.ClientCAs = cfg.ClientCAs.Pool()
			return c, nil
		}
	}
	return tlsCfg
}

// closeWhileDraining answers with Connection: close once the drain has
// started, so a client stops using its keep-alive connection after the
// answer (HTTP/2 turns the header into a graceful GOAWAY) instead of
// writing a request on a connection the server is about to close.
func (s *Server) closeWhileDraining(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.closing.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// Swap replaces the policy set atomically: reviews in flight finish with
// the set they started with.
func (s *Server) Swap(e *runtime.Engine) { s.engine.Store(e) }

// Engine returns the policy set being served.
func (s *Server) Engine() *runtime.Engine { return s.engine.Load() }

// Serve accepts HTTPS connections on l until Shutdown, at most
// MaxConnections at once; it marks the server ready once it is listening.
func (s *Server) Serve(l net.Listener) error {
	l = newLimitListener(l, s.open, s.cfg.Metrics.ConnectionsShed)
	s.listener.Store(&l)
	s.ready.Store(true)
	err := s.http.ServeTLS(l, "", "")
	if errors.Is(err, http.ErrServerClosed) || s.draining.Load() {
		return nil
	}
	return err
}

// Shutdown drains the server without dropping a request it accepted:
// readiness turns false and every answer closes its connection, so clients
// leave their keep-alive connections while they are still served; after
// delay (for endpoints to drop the pod) the listener closes, every
// connection that is new or serving a request is waited for, and only then
// are the connections left idle through the whole delay closed, all bounded
// by ctx. (http.Server.Shutdown, or SetKeepAlivesEnabled(false), alone would
// close idle keep-alive connections a client may be writing a request on.)
func (s *Server) Shutdown(ctx context.Context, delay time.Duration) error {
	s.closing.Store(true)
	s.ready.Store(false)
	s.cfg.Logger.Info("shutting down", "phase", "shutdown", "inflight", s.inflight.Load(), "delay", delay.String())
	select {
	case <-time.After(delay):
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if l := s.listener.Load(); l != nil {
		(*l).Close()
	}
	for s.conns.busy() > 0 {
		select {
		case <-ctx.Done():
			return s.http.Close()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return s.http.Shutdown(ctx)
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case !s.ready.Load():
		writeText(w, http.StatusServiceUnavailable, "shutting down")
	case s.cfg.Cluster != nil && !s.cfg.Cluster.Synced():
		writeText(w, http.StatusServiceUnavailable, "cluster caches not synced")
	default:
		writeText(w, http.StatusOK, "ok")
	}
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}

func (s *Server) reviewHandler(phase Phase) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		start := time.Now()
		entry := logEntry{phase: phase}
		defer func() {
			if p := recover(); p != nil {
				entry.verdict, entry.err = "error", "internal error"
				s.cfg.Logger.Error("panic answering review", "phase", phase, "panic", p)
				writeText(w, http.StatusInternalServerError, "internal error")
			}
			s.observe(entry, time.Since(start))
		}()
		resp, herr := s.review(r, phase, &entry)
		if herr != nil {
			entry.verdict, entry.err = "error", herr.msg
			writeText(w, herr.code, herr.msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}

func (s *Server) review(r *http.Request, phase Phase, entry *logEntry) (*admissionv1.AdmissionReview, *httpError) {
	ctx, cancel := reviewDeadline(r.Context(), r, s.cfg.ReviewTimeout)
	defer cancel()
	select {
	case s.admitted <- struct{}{}:
		defer func() { <-s.admitted }()
	default:
		return nil, &httpError{code: http.StatusTooManyRequests, msg: fmt.Sprintf("too many reviews in flight: %d evaluating and %d waiting (--max-inflight, --max-queued; raise them or add replicas); "+
			"the API server applies the webhook's failurePolicy", s.cfg.MaxInflight, s.cfg.MaxQueued)}
	}
	body, err := readBody(r)
	if err != nil {
		return nil, asHTTPError(err)
	}
	release, err := s.acquire(ctx, len(body))
	if err != nil {
		return nil, asHTTPError(err)
	}
	defer release()
	review, err := decodeReview(body)
	if err != nil {
		return nil, asHTTPError(err)
	}
	entry.fromRequest(review.Request)
	req, err := toRequest(review.Request, s.cfg.Cluster, s.cfg.MaxListItems)
	if err != nil {
		return nil, asHTTPError(err)
	}
	res, err := decide(ctx, s.engine.Load(), phase, req)
	if err != nil {
		return nil, asHTTPError(err)
	}
	resp, err := res.Response(review.Request.UID, phase == PhaseMutate)
	if err != nil {
		return nil, asHTTPError(err)
	}
	entry.fromResult(res, resp)
	return &admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}, nil
}

// LargeBodyBytes is the body size above which a review is decoded and
// evaluated in a lane of its own, one at a time: real pod reviews are a few
// KiB, and decoding a review of a megabyte takes as long as evaluating
// hundreds of ordinary ones, so large reviews never hold the slots ordinary
// ones wait for.
const LargeBodyBytes = 256 << 10

// DefaultMaxQueueWait is how long a review waits for an evaluation slot at
// most. A review takes well under a millisecond of a slot, so a wait this
// long means the webhook is past its capacity: answering at once keeps the
// latency the API server sees bounded and the queue (and memory) short.
const DefaultMaxQueueWait = 250 * time.Millisecond

// DefaultQueuePerSlot is how many reviews may wait per evaluation slot: a
// burst far above the steady rate still waits, a flood is answered at once.
const DefaultQueuePerSlot = 64

// acquire waits for an evaluation slot, in the lane a body of size bytes
// belongs to, until ctx's deadline or MaxQueueWait, whichever comes first;
// release gives it back. Decoding and
// evaluating only inside a slot bounds the CPU and the memory that reviews
// take at once, whatever arrives.
func (s *Server) acquire(ctx context.Context, size int) (release func(), err error) {
	slots, lane := s.slots, fmt.Sprintf("no evaluation slot of %d", cap(s.slots))
	if size > LargeBodyBytes {
		slots, lane = s.largeSlots, fmt.Sprintf("no evaluation slot for a review over %d KiB (one at a time)", LargeBodyBytes>>10)
	}
	release = func() { <-slots }
	select {
	case slots <- struct{}{}:
		return release, nil
	default:
	}
	wait := time.NewTimer(s.cfg.MaxQueueWait)
	defer wait.Stop()
	select {
	case slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, &httpError{code: http.StatusTooManyRequests, msg: "too many reviews in flight: " + lane +
			" freed before the review's deadline (raise --max-inflight or add replicas); the API server applies the webhook's failurePolicy"}
	case <-wait.C:
		return nil, &httpError{code: http.StatusTooManyRequests, msg: fmt.Sprintf("too many reviews in flight: %s freed within %v (--max-queue-wait; raise --max-inflight or add replicas); the API server applies the webhook's failurePolicy", lane, s.cfg.MaxQueueWait)}
	}
}

func asHTTPError(err error) *httpError {
	var h *httpError
	if errors.As(err, &h) {
		return h
	}
	return &httpError{code: http.StatusInternalServerError, msg: err.Error()}
}

// logEntry is one review's log line.
type logEntry struct {
	phase                          Phase
	kind, namespace, name, op, usr string
	subresource                    string
	dryRun                         bool
	verdict, err                   string
	fired                          []string
	violations                     []runtime.Violation
}

func (e *logEntry) fromRequest(ar *admissionv1.AdmissionRequest) {
	e.kind, e.namespace, e.name, e.op, e.usr = ar.Kind.Kind, ar.Namespace, ar.Name, string(ar.Operation), ar.UserInfo.Username
	e.subresource = ar.SubResource
	e.dryRun = ar.DryRun != nil && *ar.DryRun
}

func (e *logEntry) fromResult(res *runtime.Result, resp *admissionv1.AdmissionResponse) {
	e.fired, e.violations = res.Fired, res.Violations
	switch {
	case !resp.Allowed:
		e.verdict = "denied"
	case len(resp.Warnings) > 0:
		e.verdict = "warned"
	case len(resp.Patch) > 0:
		e.verdict = "patched"
	default:
		e.verdict = "allowed"
	}
}

func (s *Server) observe(e logEntry, d time.Duration) {
	m := s.cfg.Metrics
	m.Reviews.WithLabelValues(string(e.phase), e.verdict).Inc()
	m.Duration.WithLabelValues(string(e.phase), strconv.FormatBool(e.verdict == "denied")).Observe(d.Seconds())
	for _, v := range e.violations {
		for _, a := range v.Actions {
			m.Violations.WithLabelValues(v.Policy, string(a)).Inc()
		}
	}
	attrs := []any{"phase", e.phase, "kind", e.kind, "object", objectRef(e.namespace, e.name), "operation", e.op,
		"user", e.usr, "dryRun", e.dryRun, "verdict", e.verdict, "policies", firedOrEmpty(e.fired), "durationMs", float64(d.Microseconds()) / 1000}
	if e.subresource != "" {
		attrs = append(attrs, "subresource", e.subresource)
	}
	if e.err != "" {
		attrs = append(attrs, "error", e.err)
	}
	s.cfg.Logger.Info("review", attrs...)
}

func objectRef(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func firedOrEmpty(f []string) []string {
	if f == nil {
		return []string{}
	}
	return f
}
