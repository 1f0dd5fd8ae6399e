package cli

import (
	"cmp"
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/admitc/admitc/internal/audit"
	"github.com/admitc/admitc/internal/audit/openreports"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
	"github.com/admitc/admitc/runtime/cluster"
)

// serveAudit is `admitc serve --audit-interval`: every interval it audits
// the objects the served policies select, as `admitc audit` does, and
// writes the Reports to the cluster (server-side apply, unchanged ones
// skipped). Namespaces and parameter objects come from serve's caches;
// the objects themselves are listed page by page on each run, so memory
// does not grow with them (an informer of every Pod would hold them all).
// One worker judges them, so reviews keep the other cores.
type serveAudit struct {
	interval time.Duration
	rc       *rest.Config
	state    runtime.ClusterState
	// policies is the policy set being served (swapped on reload).
	policies *atomic.Pointer[ir.PolicySet]
	path     runtime.Path
	logger   *slog.Logger
	// auditor judges with set; it is made again when a reload swaps in
	// another set.
	auditor *audit.Auditor
	set     *ir.PolicySet
}

// run audits once the caches have synced, then every interval, until ctx
// ends.
func (s *serveAudit) run(ctx context.Context) {
	for !s.state.Synced() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		s.once(ctx)
		timer.Reset(s.interval)
	}
}

// once runs one audit and logs what it found and wrote; a failure is
// logged and the next interval tries again.
func (s *serveAudit) once(ctx context.Context) {
	start := time.Now()
	a, err := s.auditorFor(s.policies.Load())
	if err != nil {
		s.logger.Error("audit failed", "phase", "audit", "error", err.Error())
		return
	}
	clients, err := newAuditClients(s.rc)
	var targets []audit.Target
	if err == nil {
		targets, err = clients.plan(a, true)
	}
	if err != nil {
		s.logger.Error("audit failed", "phase", "audit", "error", err.Error())
		return
	}
	tally := audit.NewTally(a.Policies(), 0)
	reports := openreports.NewBuilder(a.Policies(), openreports.Options{})
	cov, err := a.Run(ctx, audit.Input{Targets: targets, Lister: audit.PagedLister{Client: clients.dynamic}, State: s.state}, audit.Sinks{tally, reports})
	if err == nil && !cov.Interrupted {
		err = s.apply(ctx, clients, reports, cov)
	}
	if err != nil {
		s.logger.Error("audit failed", "phase", "audit", "error", err.Error())
		return
	}
	s.logger.Info("audit done", "phase", "audit", "objects", cov.Judged(), "selected", tally.Objects, "failed", tally.Failed,
		"denied", tally.Denied, "complete", cov.Complete(), "durationMs", time.Since(start).Milliseconds())
}

// auditorFor is the auditor of set, made once per set.
func (s *serveAudit) auditorFor(set *ir.PolicySet) (*audit.Auditor, error) {
	if set != s.set {
		a, err := audit.New(set, audit.Options{Workers: 1, Path: s.path})
		if err != nil {
			return nil, err
		}
		s.auditor, s.set = a, set
	}
	return s.auditor, nil
}

// apply writes the Reports; Reports of namespaces with no result left are
// deleted only after a complete run.
func (s *serveAudit) apply(ctx context.Context, clients *auditClients, b *openreports.Builder, cov *audit.Coverage) error {
	set, err := b.Reports()
	if err != nil {
		return err
	}
	done, err := openreports.Applier{Client: clients.reports, Name: openreports.DefaultName}.Apply(ctx, set, cov.Complete())
	if err != nil {
		return err
	}
	for _, r := range cov.Resources {
		if r.Err != nil {
			s.logger.Warn("audit could not list a resource", "phase", "audit", "resource", r.Target.String(), "error", r.Err.Error())
		}
	}
	s.logger.Info("audit reports written", "phase", "audit", "applied", done.Applied, "unchanged", done.Unchanged, "deleted", done.Deleted)
	return nil
}

// startAudit starts the periodic audit when --audit-interval is set.
func (o *ServeOptions) startAudit(ctx context.Context, state runtime.ClusterState, logger *slog.Logger) {
	if o.AuditInterval <= 0 {
		return
	}
	rc, err := cluster.RESTConfig(o.Kubeconfig)
	if err != nil {
		logger.Error("audit off: no connection to the API server", "phase", "audit", "error", err.Error())
		return
	}
	s := &serveAudit{interval: o.AuditInterval, rc: rc, state: state, policies: &o.served, path: runtimePath(o.Policies.Engine), logger: logger}
	go s.run(ctx)
	logger.Info("auditing stored objects", "phase", "audit", "interval", o.AuditInterval.String())
}

// runtimePath is the evaluation path --engine names.
func runtimePath(engine string) runtime.Path {
	return runtime.Path(cmp.Or(engine, string(runtime.FastPath)))
}
