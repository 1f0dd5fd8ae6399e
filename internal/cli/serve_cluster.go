package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
	"github.com/admitc/admitc/runtime/cluster"
	"github.com/admitc/admitc/runtime/server"
)

// clusterSource is where serve reads namespaces and parameter objects.
type clusterSource string

const (
	// offline reads them from --namespace-labels and --params.
	offline clusterSource = ""
	// kubeconfig reads them from the API server of --kubeconfig.
	kubeconfig clusterSource = "--kubeconfig"
	// inCluster reads them from the API server of the pod serve runs in.
	inCluster clusterSource = "in-cluster configuration"
)

// describe names the source for the start-up log line.
func (c clusterSource) describe(file string) string {
	switch c {
	case kubeconfig:
		return "kubeconfig " + file
	case inCluster:
		return "in-cluster"
	}
	return "offline"
}

// Complete decides where namespaces and parameter objects come from: the
// API server of --kubeconfig, else, inside a pod, the pod's own, unless
// --offline; else files.
func (o *ServeOptions) Complete() {
	switch {
	case o.Offline:
		o.source = offline
	case o.Kubeconfig != "":
		o.source = kubeconfig
	case cluster.InPod():
		o.source = inCluster
	}
}

// clusterState returns what the webhook reads namespaces and parameter
// objects from: informers on the API server, started on ctx and counted in
// m, or the offline files.
func (o *ServeOptions) clusterState(ctx context.Context, set *ir.PolicySet, logger *slog.Logger, m *server.Metrics) (runtime.ClusterState, error) {
	if o.source == offline {
		return o.offlineState()
	}
	rc, err := cluster.RESTConfig(o.Kubeconfig)
	if err != nil {
		return nil, usageError(err)
	}
	state, err := cluster.NewForConfig(rc, cluster.Config{Logger: logger})
	if err != nil {
		return nil, usageError(fmt.Errorf("connect to the API server: %w", err))
	}
	m.Registry.MustRegister(state.Collector())
	state.Start(ctx, set)
	go func(start time.Time) {
		if state.WaitForSync(ctx) {
			logger.Info("cluster caches synced; ready", "phase", "cluster", "server", rc.Host, "durationMs", time.Since(start).Milliseconds())
		}
	}(time.Now())
	return state, nil
}

// offlineState reads --namespace-labels and --params.
func (o *ServeOptions) offlineState() (runtime.ClusterState, error) {
	state := &runtime.StaticState{}
	if o.NamespaceLabels != "" {
		labels, err := readNamespaceLabels(o.NamespaceLabels)
		if err != nil {
			return nil, usageError(err)
		}
		state.NamespaceLabels = labels
	}
	ps, err := readParams(o.Params)
	if err != nil {
		return nil, err
	}
	state.ParamObjects = make([]*unstructured.Unstructured, len(ps))
	for i, p := range ps {
		state.ParamObjects[i] = p.Object
	}
	return state, nil
}

// paramKindSyncTimeout bounds how long a policy reload waits for the
// informers of parameter kinds the new policies name for the first time.
const paramKindSyncTimeout = 10 * time.Second

// swapWatching swaps a reloaded engine in, the informers following it:
// the parameter kinds it names for the first time are watched first (their
// sync waited for, bounded), the kinds only the old set named are dropped
// after, so neither set decides without the kinds it reads.
func swapWatching(ctx context.Context, srv *server.Server, engine *runtime.Engine, state runtime.ClusterState, logger *slog.Logger) {
	live, ok := state.(*cluster.State)
	if !ok {
		srv.Swap(engine)
		return
	}
	live.Watch(engine.PolicySet())
	wait, cancel := context.WithTimeout(ctx, paramKindSyncTimeout)
	defer cancel()
	if !live.WaitForSync(wait) {
		logger.Warn("parameter kinds of the reloaded policies not synced after "+paramKindSyncTimeout.String()+"; swapping them in anyway", "phase", "reload")
	}
	srv.Swap(engine)
	live.Keep(engine.PolicySet())
}

// unservedLibraries refuses the policies whose CEL reads the cluster
// through Kyverno's resource or globalContext library when state cannot
// serve those reads: every such call would fail, and Kyverno's
// ValidatingPolicy fails (denies) on an evaluation error, so serving them
// would block every request they match.
func unservedLibraries(set *ir.PolicySet, state runtime.ClusterState) error {
	src, ok := state.(runtime.KyvernoContextSource)
	reads := ok && src.KyvernoContext() != nil
	for i := range set.Policies {
		p := &set.Policies[i]
		for _, u := range celenv.LibraryUses(p) {
			var why string
			switch {
			case u.Library == celenv.LibraryGlobalContext:
				why = "which reads Kyverno's GlobalContextEntry caches; admitc serve has none (every entry would be missing)"
			case u.Library == celenv.LibraryResource && !reads:
				why = "which reads the cluster; admitc serve reads it only from the API server (--kubeconfig, or in a cluster): without one every call would fail and deny"
			default:
				continue
			}
			return fmt.Errorf("%s:%d:%d: %s: policy %q calls Kyverno's %s library, %s; evaluate it with admitc verify and a Kyverno test, or leave it to Kyverno", u.Origin.File, u.Origin.Line, u.Origin.Column, u.Origin.Path, p.Name, u.Library, why)
		}
	}
	return nil
}
