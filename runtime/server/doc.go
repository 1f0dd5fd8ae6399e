// Package server is admitc's HTTPS admission webhook: it speaks
// admission.k8s.io/v1 AdmissionReview on /validate and /mutate and runs the
// runtime package's Engine, the same decision code as `admitc test`.
//
// It is built to never take a cluster down: bounded bodies, lists,
// deadlines and reviews evaluated at once, no panics, hot reload of policies (a broken policy is refused and the last
// good set keeps serving) and of the serving certificate, readiness that
// turns false before a graceful drain, one JSON log line per review and
// Prometheus metrics. It imports runtime, never the compiler's callers.
package server
