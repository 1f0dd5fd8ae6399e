package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
	"github.com/admitc/admitc/runtime/server"
)

// ServeOptions are the options of `admitc serve`.
type ServeOptions struct {
	Streams
	Policies        policyFlags
	Cert, Key       string
	ClientCA        string
	Host            string
	Port            int
	NamespaceLabels string
	Params          []string
	Kubeconfig      string
	Offline         bool
	ShutdownDelay   time.Duration
	DrainTimeout    time.Duration
	MaxInflight     int
	MaxQueueWait    time.Duration
	MaxQueued       int
	MaxListItems    int
	MaxConnections  int
	MaxStreams      int
	// AuditInterval, when set, audits the cluster's stored objects every
	// interval and keeps openreports.io Reports current (serve_audit.go).
	AuditInterval time.Duration

	// Listening, when set, receives the address once the server listens (tests).
	Listening func(net.Addr)

	// source is where namespaces and parameter objects are read (Complete).
	source clusterSource
	// served is the policy set being served, for the audit.
	served atomic.Pointer[ir.PolicySet]
}

// NewServeCommand returns `admitc serve`.
func NewServeCommand(s Streams) *cobra.Command {
	o := &ServeOptions{Streams: s, Policies: policyFlags{Required: true}}
	cmd := &cobra.Command{
		Use:   "serve --policies PATH --cert FILE --key FILE [flags]",
		Short: "Run the policies as an HTTPS admission webhook (/validate, /mutate)",
		Long: `Serves admission.k8s.io/v1 AdmissionReviews over HTTPS (TLS 1.2 or newer) on
/validate and /mutate, with /healthz, /readyz and /metrics. It runs the same
decision code as admitc test. --policies is required: serve enforces only the
policies it is given, never the built-in examples.

Policy files are watched: a valid change is swapped in atomically; an invalid
one is refused, logged and counted, and the last good set keeps serving. The
certificate and key are reloaded when their files change; other files in their
directories are ignored. On SIGTERM readiness turns false first and answers say
Connection: close, reviews in flight finish (bounded by --drain-timeout), then
admitc exits 0. A review over a bound (--max-list-items, --max-inflight) is
answered 413 or 429, a connection over --max-connections is closed at once,
and the API server applies the webhook's failurePolicy.
One JSON log line is written per review.

Namespaces (namespace selectors, namespaceObject) and parameter objects
(paramKind, paramRef) are read from the API server through caches: with
--kubeconfig, or inside a pod (the default there, with the pod's service
account). Only the objects a paramRef names or selects are listed, watched
and kept. /readyz turns true once the caches have synced; if the API server
later becomes unreachable, decisions go on from the last synced state and a
log line and admitc_cluster_api_reachable say so; once it answers again,
/readyz and admitc_cluster_synced wait for the caches to list again. A
paramKind the API server does not serve is looked up again every 10s;
meanwhile its policies are decided by their failure policy, as the API
server decides them. Outside a
pod, or with --offline, they are read from files instead: --namespace-labels
and --params.

Exit codes: 0 after a graceful shutdown, 2 when --policies is missing, the
policies do not compile or the certificate cannot be loaded at start-up.`,
		Example: `  admitc certs --out tls --dns localhost --ip 127.0.0.1
  admitc serve --policies examples/policies/policies.json --cert tls/tls.crt --key tls/tls.key --host 127.0.0.1 --port 8443`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			o.Complete()
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(ctx)
		},
	}
	f := cmd.Flags()
	o.Policies.add(f)
	f.StringVar(&o.Cert, "cert", "", "serving certificate (PEM), reloaded when it changes")
	f.StringVar(&o.Key, "key", "", "serving key (PEM), reloaded when it changes")
	f.StringVar(&o.ClientCA, "client-ca", "", "require client certificates signed by this CA (the API server's client certificate)")
	f.StringVar(&o.Host, "host", "0.0.0.0", "address to listen on")
	f.IntVar(&o.Port, "port", 8443, "port to listen on")
	f.StringVar(&o.NamespaceLabels, "namespace-labels", "", "offline: YAML/JSON file mapping namespace names to their labels, for namespaceObject and namespace selectors")
	f.StringSliceVar(&o.Params, "params", nil, "offline: files holding parameter objects for policies with paramKind")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "read namespaces and parameter objects from the API server this kubeconfig file connects to (inside a pod, the pod's own API server is the default)")
	f.BoolVar(&o.Offline, "offline", false, "read namespaces and parameter objects from files (--namespace-labels, --params), even inside a pod")
	f.DurationVar(&o.ShutdownDelay, "shutdown-delay", 2*time.Second, "after SIGTERM, how long /readyz fails before the listener closes")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 30*time.Second, "after SIGTERM, the longest wait for reviews in flight")
	f.DurationVar(&o.MaxQueueWait, "max-queue-wait", server.DefaultMaxQueueWait, "longest wait of a review for an evaluation slot: past it (or past the review's deadline) the answer is 429 at once, and the API server applies the webhook's failurePolicy")
	f.IntVar(&o.MaxQueued, "max-queued", 0, fmt.Sprintf("reviews that may wait for an evaluation slot (0: %d per slot); one more is answered 429 at once, before its body is read, and the API server applies the webhook's failurePolicy", server.DefaultQueuePerSlot))
	f.IntVar(&o.MaxInflight, "max-inflight", 0, "reviews decoded and evaluated at once (0: GOMAXPROCS); a review that finds no free slot before its deadline is answered 429 and the API server applies the webhook's failurePolicy")
	f.IntVar(&o.MaxConnections, "max-connections", server.DefaultMaxConnections, "connections open at once; one more is closed as soon as it is accepted (the API server applies the webhook's failurePolicy at once)")
	f.IntVar(&o.MaxStreams, "max-concurrent-streams", server.DefaultMaxConcurrentStreams, "reviews one HTTP/2 connection may carry at once (the API server opens another connection past it); with --max-connections it bounds the requests held in memory")
	f.IntVar(&o.MaxListItems, "max-list-items", server.DefaultMaxListItems, "longest list an object may hold to be evaluated; a longer one is answered 413 and the API server applies the webhook's failurePolicy (CEL evaluation time grows with the square of a list's length)")
	f.DurationVar(&o.AuditInterval, "audit-interval", 0, "audit the objects the cluster stores with the served policies every interval, as admitc audit does, and keep openreports.io Reports (one per namespace, and a ClusterReport) current with server-side apply; needs the API server and the RBAC the webhook backend emits with --audit-interval (0: off)")
	_ = cmd.MarkFlagRequired("cert")
	_ = cmd.MarkFlagRequired("key")
	return cmd
}

// Validate checks the options before anything is loaded: serve needs
// --policies, since it enforces them, sane bounds, and one source of
// namespaces and parameter objects.
func (o *ServeOptions) Validate() error {
	switch {
	case o.Offline && o.Kubeconfig != "":
		return usageError(errors.New("--offline reads namespaces and parameter objects from files; --kubeconfig reads them from the API server: give one"))
	case o.source != offline && (o.NamespaceLabels != "" || len(o.Params) > 0):
		return usageError(fmt.Errorf("--namespace-labels and --params are for offline use: with %s, namespaces and parameter objects come from the API server (add --offline to read files instead)", o.source))
	case o.MaxQueued < 0:
		return usageError(fmt.Errorf("--max-queued %d: want 0 (%d per slot) or more reviews", o.MaxQueued, server.DefaultQueuePerSlot))
	case o.MaxQueueWait < 0:
		return usageError(fmt.Errorf("--max-queue-wait %v: want 0 (the default, %v) or a positive duration", o.MaxQueueWait, server.DefaultMaxQueueWait))
	case o.MaxInflight < 0:
		return usageError(fmt.Errorf("--max-inflight %d: want 0 (GOMAXPROCS) or more reviews at once", o.MaxInflight))
	case o.MaxConnections < 0:
		return usageError(fmt.Errorf("--max-connections %d: want 0 (the default, %d) or more connections", o.MaxConnections, server.DefaultMaxConnections))
	case o.MaxStreams < 0:
		return usageError(fmt.Errorf("--max-concurrent-streams %d: want 0 (the default, %d) or more streams", o.MaxStreams, server.DefaultMaxConcurrentStreams))
	case o.AuditInterval < 0:
		return usageError(fmt.Errorf("--audit-interval %v: want 0 (off) or a positive duration", o.AuditInterval))
	case o.AuditInterval > 0 && o.source == offline:
		return usageError(errors.New("--audit-interval audits the objects the API server stores: it needs --kubeconfig, or to run in a pod, and not --offline"))
	case o.MaxListItems < 0:
		return usageError(fmt.Errorf("--max-list-items %d: want 0 (the default, %d) or more items", o.MaxListItems, server.DefaultMaxListItems))
	}
	return o.Policies.validate()
}

// Run serves until ctx is cancelled (SIGTERM), then drains and returns nil.
func (o *ServeOptions) Run(ctx context.Context) error {
	logger := slog.New(slog.NewJSONHandler(o.Err, nil))
	// A review allocates a few hundred KiB of short-lived CEL values while
	// the live heap stays small, so collecting less often frees a large
	// share of the CPU.
	tuneGC(400)
	engine, err := servedEngine(&o.Policies)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics()
	certs, err := server.NewCertSource(o.Cert, o.Key, func(c *x509.Certificate) {
		metrics.CertExpiry.Set(float64(c.NotAfter.Unix()))
	})
	if err != nil {
		return usageError(err)
	}
	cfg := server.Config{Engine: engine, Certs: certs, Logger: logger, Metrics: metrics,
		MaxInflight: o.MaxInflight, MaxQueueWait: o.MaxQueueWait, MaxQueued: o.MaxQueued, MaxListItems: o.MaxListItems,
		MaxConnections: o.MaxConnections, MaxConcurrentStreams: o.MaxStreams}
	if o.ClientCA != "" {
		if cfg.ClientCAs, err = server.LoadCertPool(o.ClientCA); err != nil {
			return usageError(err)
		}
	}
	state, err := o.clusterState(ctx, engine.PolicySet(), logger, metrics)
	if err != nil {
		return err
	}
	if err := unservedLibraries(engine.PolicySet(), state); err != nil {
		return usageError(err)
	}
	cfg.Cluster = state
	o.served.Store(engine.PolicySet())
	srv := server.New(cfg)
	l, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return usageError(fmt.Errorf("listen: %w", err))
	}
	if err := o.watch(ctx, srv, certs, metrics, logger, state); err != nil {
		l.Close()
		return usageError(err)
	}
	o.startAudit(ctx, state, logger)
	logger.Info("serving", "phase", "start", "address", l.Addr().String(), "policies", len(engine.PolicySet().Policies), "cluster", o.source.describe(o.Kubeconfig))
	if o.Listening != nil {
		o.Listening(l.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.Background(), o.ShutdownDelay+o.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drain, o.ShutdownDelay); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	logger.Info("stopped", "phase", "shutdown")
	return <-errc
}

// servedEngine compiles the policies into the engine serve runs, then
// drops what the compiler keeps for another compile and returns the memory
// compiling took to the OS: between reloads the server holds only what
// judging needs (the 40 Pod Security and best-practice policies of
// examples/kyverno-pattern: 187 against 392 to 428 MiB RSS once
// listening, ready as fast).
func servedEngine(policies *policyFlags) (*runtime.Engine, error) {
	engine, err := policies.engine()
	if err != nil {
		return nil, err
	}
	releaseCompileCaches()
	return engine, nil
}

// releaseCompileCaches drops what the compiler keeps for another compile
// (the programs of its type checks, the schemas it read) and returns the
// memory compiling took to the OS: audit before its engines compile their
// own programs (for evaluation, another mode), serve once its engine is
// built. For a large policy set they take as much memory as the engine.
func releaseCompileCaches() {
	compiler.ForgetCaches()
	debug.FreeOSMemory()
}

// watch reloads policies and the certificate when their files change.
func (o *ServeOptions) watch(ctx context.Context, srv *server.Server, certs *server.CertSource, m *server.Metrics, logger *slog.Logger, state runtime.ClusterState) error {
	if len(o.Policies.Paths) > 0 {
		spec := server.WatchSpec{Paths: o.Policies.Paths, DirEntry: compiler.IsPolicyFile}
		err := server.Watch(ctx, spec, logger, func() {
			engine, err := servedEngine(&o.Policies)
			if err == nil {
				err = unservedLibraries(engine.PolicySet(), state)
			}
			if err != nil {
				m.Reloads.WithLabelValues("failure").Inc()
				logger.Error("policy reload refused; the last good policies keep serving", "phase", "reload", "error", err.Error())
				return
			}
			swapWatching(ctx, srv, engine, state, logger)
			o.served.Store(engine.PolicySet())
			m.Reloads.WithLabelValues("success").Inc()
			logger.Info("policies reloaded", "phase", "reload", "policies", len(engine.PolicySet().Policies))
		})
		if err != nil {
			return err
		}
	}
	return server.Watch(ctx, server.WatchSpec{Paths: certs.Files()}, logger, func() {
		if err := certs.Reload(); err != nil {
			logger.Error("certificate reload failed; the current certificate keeps serving", "phase", "reload", "error", err.Error())
			return
		}
		logger.Info("certificate reloaded", "phase", "reload")
	})
}

func readNamespaceLabels(file string) (map[string]map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read --namespace-labels: %w", err)
	}
	var out map[string]map[string]string
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		return nil, fmt.Errorf("--namespace-labels %s: want a map of namespace name to labels: %w", file, err)
	}
	return out, nil
}

// tuneGC trades memory for CPU: the collector runs at percent
// (defaultGCPercent). In a container with a memory limit (cgroup
// memory.max), the Go runtime is held to 90% of it, so a heap that GOGC
// lets grow is collected before the kernel kills the process; GOMEMLIMIT in
// the environment wins.
func tuneGC(percent int) {
	defaultGCPercent(percent)
	limitToContainer()
}

// defaultGCPercent sets the collector's GOGC to percent, unless GOGC is
// set in the environment: the user's wins.
func defaultGCPercent(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}

// limitToContainer holds the Go runtime to 90% of the container's memory
// limit (cgroup memory.max), when there is one and GOMEMLIMIT is unset, so
// the heap is collected before the kernel kills the process.
func limitToContainer() {
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit, ok := cgroupMemoryLimit(cgroupMemoryMax); ok {
			debug.SetMemoryLimit(limit / 10 * 9)
		}
	}
}

// cgroupMemoryMax is the cgroup v2 memory limit of the process's container.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// cgroupMemoryLimit reads a cgroup v2 memory.max file: the limit in bytes,
// false when there is none ("max") or the file cannot be read.
func cgroupMemoryLimit(file string) (int64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
