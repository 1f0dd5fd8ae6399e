package openreports

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/admitc/admitc/ir"
)

// Labels and annotations of the Reports admitc writes.
const (
	// ManagedByLabel marks them as admitc's (app.kubernetes.io/managed-by: admitc).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "admitc"
	// HashAnnotation is a digest of a Report's summary and results
	// (timestamps left out): --apply skips a Report whose digest the
	// cluster's copy already carries.
	HashAnnotation = "admitc.dev/results-hash"
	// NotListedAnnotation counts the results over the size cap, counted in
	// the summary and not listed in results.
	NotListedAnnotation = "admitc.dev/results-not-listed"
)

// Set is the Reports of one audit: one per namespace, sorted by
// namespace, and the ClusterReport (nil when no cluster-scoped object was
// selected).
type Set struct {
	Reports []*v1alpha1.Report
	Cluster *v1alpha1.ClusterReport
}

// Reports builds the Reports of every result received so far.
func (b *Builder) Reports() (*Set, error) {
	out := &Set{}
	for _, ns := range b.namespaces() {
		c, err := b.content(b.reports[ns])
		if err != nil {
			return nil, err
		}
		meta := c.meta(b.opts.Name, ns)
		if ns == "" {
			out.Cluster = &v1alpha1.ClusterReport{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterReport"},
				ObjectMeta: meta, Source: Source, Configuration: c.config, Summary: c.summary, Results: c.results}
			continue
		}
		out.Reports = append(out.Reports, &v1alpha1.Report{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Report"},
			ObjectMeta: meta, Source: Source, Configuration: c.config, Summary: c.summary, Results: c.results})
	}
	return out, nil
}

// content is what a Report holds besides its name.
type content struct {
	summary   v1alpha1.ReportSummary
	config    *v1alpha1.ReportConfiguration
	results   []v1alpha1.ReportResult
	notListed int
	hash      string
}

// meta is the Report's metadata: its name, labels and annotations.
func (c *content) meta(name, namespace string) metav1.ObjectMeta {
	ann := map[string]string{HashAnnotation: c.hash}
	if c.notListed > 0 {
		ann[NotListedAnnotation] = strconv.Itoa(c.notListed)
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{ManagedByLabel: ManagedBy}, Annotations: ann}
}

// content turns p into a Report's content under the cap: the entries the
// estimate kept, in listing order, then, should the JSON still be over the
// cap, fewer (the least important first given up).
func (b *Builder) content(p *pending) (*content, error) {
	kept := p.sortedKept()
	for {
		c := b.contentOf(p, kept)
		data, err := json.Marshal(c.results)
		if err != nil {
			return nil, err
		}
		over := len(data) + reportOverhead - b.opts.MaxBytes
		if over <= 0 || len(kept) == 0 {
			return c, c.digest()
		}
		kept = dropLeastImportant(kept, over)
	}
}

// contentOf is p's content with the entries kept.
func (b *Builder) contentOf(p *pending, kept []*entry) *content {
	c := &content{notListed: p.omitted + len(p.kept) - len(kept)}
	c.summary = v1alpha1.ReportSummary{Pass: p.counts.pass, Fail: p.counts.fail, Error: p.counts.error, Skip: p.counts.skip}
	if c.notListed > 0 {
		c.config = &v1alpha1.ReportConfiguration{Limits: v1alpha1.Limits{MaxResults: len(kept)}}
	}
	c.results = make([]v1alpha1.ReportResult, len(kept))
	for i, e := range kept {
		c.results[i] = b.result(e)
	}
	return c
}

// dropLeastImportant gives up the least important entries whose estimated
// size adds up to over bytes (one at least), keeping listing order.
func dropLeastImportant(kept []*entry, over int) []*entry {
	byImportance := append([]*entry(nil), kept...)
	sort.Slice(byImportance, func(i, j int) bool { return byImportance[i].less(byImportance[j]) })
	drop := map[*entry]bool{}
	for i := len(byImportance) - 1; i >= 0 && (over > 0 || len(drop) == 0); i-- {
		drop[byImportance[i]] = true
		over -= byImportance[i].size
	}
	out := kept[:0:0]
	for _, e := range kept {
		if !drop[e] {
			out = append(out, e)
		}
	}
	return out
}

// result is one entry as a ReportResult.
func (b *Builder) result(e *entry) v1alpha1.ReportResult {
	r := e.result
	out := v1alpha1.ReportResult{
		Source: Source, Policy: r.Policy, Timestamp: metav1.Timestamp{Seconds: b.opts.Time.Unix(), Nanos: int32(b.opts.Time.Nanosecond())},
		Result: v1alpha1.Result(r.Status), Scored: true, Description: r.Message,
		Subjects:   []corev1.ObjectReference{{APIVersion: e.obj.apiVersion, Kind: e.obj.kind, Namespace: e.obj.namespace, Name: e.obj.name, UID: types.UID(e.obj.uid)}},
		Properties: map[string]string{"operation": string(r.Operation)},
	}
	if p := b.policies[r.Policy]; p != nil {
		out.Policy, out.Rule, out.Category = p.Name(), p.Rule(), p.Category()
		out.Severity = severity(p.Severity())
	}
	if r.Operation == ir.Update {
		out.Properties["operation"] = "UPDATE (the old object is the object itself: the policy matches UPDATE only)"
	}
	if r.Binding != "" && r.Binding != r.Policy {
		out.Properties["binding"] = r.Binding
	}
	if len(r.Actions) > 0 {
		out.Properties["actions"] = actions(r)
	}
	if r.Denied {
		out.Properties["denied"] = "true"
	}
	return out
}

// severity is a severity annotation as openreports.io's enumeration
// spells it, or "" when it is none of critical, high, medium, low, info.
func severity(s string) v1alpha1.ResultSeverity {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "critical", "high", "medium", "low", "info":
		return v1alpha1.ResultSeverity(v)
	}
	return ""
}

// digest sets c.hash from its summary, configuration and results, the
// timestamps left out.
func (c *content) digest() error {
	results := make([]v1alpha1.ReportResult, len(c.results))
	for i, r := range c.results {
		r.Timestamp = metav1.Timestamp{}
		results[i] = r
	}
	data, err := json.Marshal(struct {
		Summary v1alpha1.ReportSummary        `json:"summary"`
		Config  *v1alpha1.ReportConfiguration `json:"configuration"`
		Results []v1alpha1.ReportResult       `json:"results"`
		Omitted int                           `json:"notListed"`
	}{c.summary, c.config, results, c.notListed})
	if err != nil {
		return fmt.Errorf("digest a report: %w", err)
	}
	sum := sha256.Sum256(data)
	c.hash = hex.EncodeToString(sum[:16])
	return nil
}

// Objects are the Reports in output order: the ClusterReport first, then
// the Reports by namespace.
func (s *Set) Objects() []k8sruntime.Object {
	var out []k8sruntime.Object
	if s.Cluster != nil {
		out = append(out, s.Cluster)
	}
	for _, r := range s.Reports {
		out = append(out, r)
	}
	return out
}

// FileName is the file --out writes a Report to: clusterreport.yaml, or
// report-NAMESPACE.yaml (a namespace name holds no dot, so none is
// mistaken for another).
func FileName(obj k8sruntime.Object) string {
	if r, ok := obj.(*v1alpha1.Report); ok {
		return "report-" + r.Namespace + ".yaml"
	}
	return "clusterreport.yaml"
}
