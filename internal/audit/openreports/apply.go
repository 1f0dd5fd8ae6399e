package openreports

import (
	"context"
	"encoding/json"
	"fmt"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	acv1alpha1 "github.com/openreports/reports-api/pkg/client/applyconfiguration/openreports.io/v1alpha1"
	"github.com/openreports/reports-api/pkg/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/admitc/admitc/internal/audit"
)

// FieldManager is the field manager of admitc's server-side applies.
const FieldManager = "admitc-audit"

// Applier writes Reports to a cluster.
type Applier struct {
	Client versioned.Interface
	// Name is the Reports' name (Options.Name).
	Name string
}

// Applied counts what Apply did.
type Applied struct {
	// Applied Reports were written; Unchanged ones already held the same
	// results; Deleted ones were admitc's Reports of namespaces with no
	// result any more.
	Applied, Unchanged, Deleted int
}

// Apply writes every Report of set with server-side apply, skipping those
// whose results the cluster's copy already holds (HashAnnotation). With
// prune, admitc's Reports of the same name in other namespaces, and the
// ClusterReport when set has none, are deleted: their objects are gone or
// no longer selected. Prune only after a complete audit.
func (a Applier) Apply(ctx context.Context, set *Set, prune bool) (Applied, error) {
	var done Applied
	existing, err := a.existingReports(ctx)
	if err != nil {
		return done, err
	}
	for _, r := range set.Reports {
		if existing[r.Namespace] == r.Annotations[HashAnnotation] {
			done.Unchanged++
		} else if err := a.applyReport(ctx, r); err != nil {
			return done, err
		} else {
			done.Applied++
		}
		delete(existing, r.Namespace)
	}
	if prune {
		for ns := range existing {
			err := a.Client.OpenreportsV1alpha1().Reports(ns).Delete(ctx, a.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return done, fmt.Errorf("delete Report %s/%s: %w", ns, a.Name, err)
			}
			done.Deleted++
		}
	}
	return a.applyCluster(ctx, set.Cluster, prune, done)
}

// existingReports are the digests of admitc's Reports of that name, by
// namespace.
func (a Applier) existingReports(ctx context.Context) (map[string]string, error) {
	list, err := a.Client.OpenreportsV1alpha1().Reports(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy}).String(),
		FieldSelector: fields.OneTermEqualSelector("metadata.name", a.Name).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("list Reports: %w", err)
	}
	out := map[string]string{}
	for _, r := range list.Items {
		out[r.Namespace] = r.Annotations[HashAnnotation]
	}
	return out, nil
}

// applyCluster writes, skips or (with prune) deletes the ClusterReport.
func (a Applier) applyCluster(ctx context.Context, r *v1alpha1.ClusterReport, prune bool, done Applied) (Applied, error) {
	client := a.Client.OpenreportsV1alpha1().ClusterReports()
	old, err := client.Get(ctx, a.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		old = nil
	case err != nil:
		return done, fmt.Errorf("get ClusterReport %s: %w", a.Name, err)
	}
	switch {
	case r == nil && old != nil && prune && old.Labels[ManagedByLabel] == ManagedBy:
		if err := client.Delete(ctx, a.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return done, fmt.Errorf("delete ClusterReport %s: %w", a.Name, err)
		}
		done.Deleted++
	case r == nil:
	case old != nil && old.Annotations[HashAnnotation] == r.Annotations[HashAnnotation]:
		done.Unchanged++
	default:
		var ac acv1alpha1.ClusterReportApplyConfiguration
		if err := convert(r, &ac); err != nil {
			return done, err
		}
		if _, err := client.Apply(ctx, &ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return done, fmt.Errorf("apply ClusterReport %s: %w", a.Name, err)
		}
		done.Applied++
	}
	return done, nil
}

// applyReport writes one Report.
func (a Applier) applyReport(ctx context.Context, r *v1alpha1.Report) error {
	var ac acv1alpha1.ReportApplyConfiguration
	if err := convert(r, &ac); err != nil {
		return err
	}
	if _, err := a.Client.OpenreportsV1alpha1().Reports(r.Namespace).Apply(ctx, &ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply Report %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// convert turns a typed Report into its apply configuration: both are the
// same JSON.
func convert(from, into any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// Served checks that the API server serves openreports.io/v1alpha1
// Reports and ClusterReports (their CRDs are installed).
func Served(disc discovery.ServerResourcesInterface) error {
	gv := v1alpha1.GroupVersion.String()
	list, err := disc.ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discover %s: %w", gv, err)
	}
	served := map[string]bool{}
	if list != nil {
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
	}
	for _, r := range []string{"reports", "clusterreports"} {
		if !served[r] {
			return fmt.Errorf("%w: the API server does not serve %s: install the openreports.io CRDs first (config/crd of github.com/openreports/reports-api)",
				audit.ErrNotServed, schema.GroupResource{Group: v1alpha1.GroupName, Resource: r})
		}
	}
	return nil
}
