package openreports

import (
	"container/heap"
	"sort"
	"strings"
	"time"

	"github.com/admitc/admitc/internal/audit"
)

// Options configure the Reports a Builder writes.
type Options struct {
	// Name names every Report and the ClusterReport (default DefaultName).
	Name string
	// MaxBytes caps the size of each Report as JSON (default
	// DefaultMaxBytes; the API server stores an object of at most 1.5 MiB).
	MaxBytes int
	// Time stamps every result (default: when the Builder is made).
	Time time.Time
}

// Defaults of Options.
const (
	DefaultName     = "admitc-audit"
	DefaultMaxBytes = 512 << 10
)

// Source is the reports' and results' source.
const Source = "admitc"

// Builder collects an audit's results into Reports; it implements
// audit.Sink.
type Builder struct {
	opts     Options
	policies map[string]*audit.Policy
	// reports are the Reports being built, by namespace ("" for the
	// ClusterReport).
	reports map[string]*pending
	seq     int
}

var _ audit.Sink = (*Builder)(nil)

// NewBuilder returns a Builder for the audited policies.
func NewBuilder(policies []*audit.Policy, opts Options) *Builder {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Time.IsZero() {
		opts.Time = time.Now()
	}
	b := &Builder{opts: opts, policies: map[string]*audit.Policy{}, reports: map[string]*pending{}}
	for _, p := range policies {
		b.policies[p.IR.Name] = p
	}
	return b
}

// pending is one Report being built: its counts, and the results that fit
// under the cap, in a heap whose top is the first to give up.
type pending struct {
	counts  counts
	kept    entries
	bytes   int
	omitted int
}

// counts are a Report's summary.
type counts struct{ pass, fail, error, skip int }

func (c *counts) add(s audit.Status) {
	switch s {
	case audit.Pass:
		c.pass++
	case audit.Fail:
		c.fail++
	case audit.Error:
		c.error++
	case audit.Skip:
		c.skip++
	}
}

// object is the part of an object every result of it shares.
type object struct {
	apiVersion, kind, namespace, name, uid string
}

// entry is one result kept for a Report.
type entry struct {
	seq    int
	obj    *object
	result audit.PolicyResult
	size   int
}

// importance orders results for the cap: fails first, then errors, skips
// and passes; among equals, the first listed.
func (e *entry) less(o *entry) bool {
	if a, b := statusOrder(e.result.Status), statusOrder(o.result.Status); a != b {
		return a < b
	}
	return e.seq < o.seq
}

func statusOrder(s audit.Status) int {
	switch s {
	case audit.Fail:
		return 0
	case audit.Error:
		return 1
	case audit.Skip:
		return 2
	}
	return 3
}

// entries is a heap with the least important entry on top.
type entries []*entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[j].less(h[i]) }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries) Push(x any)        { *h = append(*h, x.(*entry)) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// Object implements audit.Sink.
func (b *Builder) Object(o *audit.ObjectResult) error {
	ns := o.Namespace
	p := b.reports[ns]
	if p == nil {
		p = &pending{}
		b.reports[ns] = p
	}
	obj := &object{apiVersion: o.APIVersion, kind: o.Kind, namespace: o.Namespace, name: o.Name, uid: string(o.UID)}
	for _, r := range o.Results {
		p.counts.add(r.Status)
		e := &entry{seq: b.seq, obj: obj, result: r}
		b.seq++
		e.size = b.estimate(e)
		heap.Push(&p.kept, e)
		p.bytes += e.size
		for p.bytes > b.budget() && len(p.kept) > 0 {
			drop := heap.Pop(&p.kept).(*entry)
			p.bytes -= drop.size
			p.omitted++
		}
	}
	return nil
}

// budget is what the results of one Report may take: the cap less what
// the rest of the Report takes.
func (b *Builder) budget() int {
	return b.opts.MaxBytes - reportOverhead
}

// reportOverhead bounds a Report's JSON besides its results: type and
// metadata, source, configuration and summary.
const reportOverhead = 1024

// resultOverhead bounds a result's JSON besides its strings: field names,
// quotes, the timestamp and the object reference's keys.
const resultOverhead = 320

// estimate bounds the size of an entry's result as JSON. Messages are
// counted twice over in case every character needs escaping.
func (b *Builder) estimate(e *entry) int {
	n := resultOverhead + len(e.obj.apiVersion) + len(e.obj.kind) + len(e.obj.namespace) + len(e.obj.name) + len(e.obj.uid) +
		len(e.result.Binding) + 2*len(e.result.Message) + 16*len(e.result.Actions)
	if p := b.policies[e.result.Policy]; p != nil {
		n += len(p.Name()) + len(p.Rule()) + len(p.Category()) + len(p.Severity())
	} else {
		n += len(e.result.Policy)
	}
	return n
}

// namespaces are the namespaces with results, sorted; "" (the cluster)
// first.
func (b *Builder) namespaces() []string {
	out := make([]string, 0, len(b.reports))
	for ns := range b.reports {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// sortedKept returns p's kept entries in listing order.
func (p *pending) sortedKept() []*entry {
	out := append([]*entry(nil), p.kept...)
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// actions joins a result's actions for its properties.
func actions(r audit.PolicyResult) string {
	parts := make([]string, len(r.Actions))
	for i, a := range r.Actions {
		parts[i] = string(a)
	}
	return strings.Join(parts, ",")
}
