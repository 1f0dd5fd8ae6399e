package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openreports/reports-api/pkg/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/admitc/admitc/internal/audit"
	"github.com/admitc/admitc/internal/audit/openreports"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime/cluster"
)

// auditClients are what an audit reads and writes the cluster with: the
// same connection for discovery, LISTs and Reports.
type auditClients struct {
	host      string
	discovery discovery.DiscoveryInterface
	dynamic   dynamic.Interface
	reports   versioned.Interface
}

func newAuditClients(rc *rest.Config) (*auditClients, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "admitc-audit"
	c := &auditClients{host: rc.Host}
	var err error
	if c.discovery, err = discovery.NewDiscoveryClientForConfig(rc); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.reports, err = versioned.NewForConfig(rc); err != nil {
		return nil, err
	}
	return c, nil
}

// plan resolves what a audits through discovery: the resources to list,
// and that every parameter kind is served (and, with reports, the
// openreports.io kinds). Each failure says which: an API server that does
// not answer, credentials it refuses, a kind it does not serve.
func (c *auditClients) plan(a *audit.Auditor, reports bool) ([]audit.Target, error) {
	targets, err := a.Plan(c.discovery)
	if err == nil {
		err = a.CheckParamKinds(c.discovery)
	}
	if err == nil && reports {
		err = openreports.Served(c.discovery)
	}
	return targets, c.explain(err)
}

// explain rewords a failure to reach or use the API server.
func (c *auditClients) explain(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s refused the credentials (an expired or revoked token, a wrong certificate?): %w", c.host, err)
	case errors.Is(err, audit.ErrNotServed), apierrors.IsForbidden(err):
		return err
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("cannot reach the API server at %s: %w", c.host, err)
	}
	return err
}

// clusterStateTimeout bounds the wait for the namespace and parameter
// caches of an audit.
const clusterStateTimeout = 30 * time.Second

// auditState starts the caches an audit reads namespaces and parameter
// objects from (the ones serve runs) and waits until they have listed.
func auditState(ctx context.Context, rc *rest.Config, set *ir.PolicySet) (*cluster.State, error) {
	state, err := cluster.NewForConfig(rc, cluster.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("connect to the API server: %w", err)
	}
	state.Start(ctx, set)
	wait, cancel := context.WithTimeout(ctx, clusterStateTimeout)
	defer cancel()
	if !state.WaitForSync(wait) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("namespaces and parameter objects not listed after %s: may these credentials list and watch namespaces (and the policies' parameter objects)?", clusterStateTimeout)
	}
	return state, nil
}
