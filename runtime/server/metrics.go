package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the webhook's Prometheus metrics, named after the API
// server's admission metrics (apiserver_admission_*) with admitc's prefix.
type Metrics struct {
	Registry *prometheus.Registry
	// Reviews counts reviews by phase and verdict (allowed, denied, warned, error).
	Reviews *prometheus.CounterVec
	// Violations counts policy violations by policy and action.
	Violations *prometheus.CounterVec
	// Duration is the review latency by phase and whether it was rejected.
	Duration *prometheus.HistogramVec
	// Reloads counts policy reloads by result (success, failure).
	Reloads *prometheus.CounterVec
	// CertExpiry is the serving certificate's NotAfter, in Unix seconds.
	CertExpiry prometheus.Gauge
	// ConnectionsShed counts connections closed as soon as accepted, over
	// MaxConnections; HTTP2Errors counts HTTP/2 protocol errors by type
	// (stream_PROTOCOL_ERROR_over_max_streams: a client that opened more streams than allowed).
	ConnectionsShed prometheus.Counter
	HTTP2Errors     *prometheus.CounterVec
}

// NewMetrics registers admitc's metrics (and the Go and process collectors)
// on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admitc_admission_webhook_requests_total", Help: "Admission reviews answered, by phase and verdict.",
		}, []string{"phase", "verdict"}),
		Violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admitc_admission_policy_violations_total", Help: "Policy violations found, by policy and validation action.",
		}, []string{"policy", "action"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "admitc_admission_webhook_admission_duration_seconds", Help: "Time to answer an admission review, by phase and whether it was rejected.",
			Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5},
		}, []string{"phase", "rejected"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admitc_policy_reloads_total", Help: "Policy reloads, by result; a failed reload keeps the last good policies.",
		}, []string{"result"}),
		CertExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "admitc_serving_certificate_expiration_timestamp_seconds", Help: "NotAfter of the serving certificate, in Unix seconds.",
		}),
		ConnectionsShed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "admitc_connections_shed_total", Help: "Connections closed as soon as accepted: more than --max-connections were open.",
		}),
		HTTP2Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admitc_http2_errors_total", Help: "HTTP/2 protocol errors, by type (stream_PROTOCOL_ERROR_over_max_streams: a client opened more than --max-concurrent-streams streams on a connection, and the extra ones were refused).",
		}, []string{"type"}),
	}
	m.Registry.MustRegister(m.Reviews, m.Violations, m.Duration, m.Reloads, m.CertExpiry, m.ConnectionsShed, m.HTTP2Errors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
