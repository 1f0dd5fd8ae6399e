// Package openreports turns an audit's results into openreports.io/v1alpha1
// Reports (github.com/openreports/reports-api): one Report per namespace for
// namespaced objects and one ClusterReport for cluster-scoped ones, each
// under a size cap, and applies them to a cluster with server-side apply,
// skipping the Reports whose results did not change.
//
// The Builder is an audit.Sink. It keeps, per Report, the results that fit
// under the cap, the most severe first (fail, error, skip, pass), and counts
// every result in the Report's summary, so a result beyond the cap is
// counted, never silently dropped: the Report says how many results it
// does not list. Its memory is bounded by the cap and the number of
// namespaces, not by the number of objects.
//
// It imports internal/audit, the openreports API types and client, and
// client-go; it must not import internal/cli.
package openreports
