// Package audit judges the objects a cluster already stores with the
// policies admitc enforces, as `admitc audit` and `admitc serve
// --audit-interval` report them.
//
// It owns four phases. Planning (plan.go) turns the policies' match rules
// into the resources to list, resolved through the API server's discovery,
// and decides how each policy judges a stored object: as a CREATE, as an
// UPDATE whose old object is the object itself when the policy matches
// only UPDATE, or not at all (DELETE or CONNECT only); a policy that reads
// what only a request carries (celenv.RequestReads) is reported as skipped.
// Listing (list.go) reads each resource with paginated LISTs (client-go's
// pager). Judging (judge.go) runs runtime.Engine, the webhook's engine, on
// each object with the cluster's namespaces and parameter objects, and turns
// its trace into one result per policy and binding. Running (run.go) streams
// objects from the lister through a worker pool over GOMAXPROCS and hands
// results to a Sink in listing order, so outputs are deterministic and
// memory stays flat however many objects there are.
//
// The outputs are sinks: Tally and the table (table.go), JSON (json.go),
// JUnit (junit.go), and openreports.io Reports (the openreports package).
//
// It imports runtime, ir, internal/celenv and client-go; it must not import
// internal/cli, runtime/server or any backend.
package audit
