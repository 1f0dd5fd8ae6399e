package audit

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/runtime"
)

// Input is what one audit run reads: the resources to list, how, and the
// cluster's namespaces and parameter objects.
type Input struct {
	Targets []Target
	Lister  Lister
	State   runtime.ClusterState
	// Progress, when set, is kept up to date while the run goes on.
	Progress *Progress
}

// Progress counts a run's work as it goes, for a progress line; it is
// safe to read while the run writes it.
type Progress struct {
	Listed, Judged, Denied atomic.Int64
	// Resource is the resource being listed (a Target's String).
	Resource atomic.Value
}

// Coverage says what a run covered.
type Coverage struct {
	Resources []ResourceCoverage `json:"resources"`
	// Interrupted is true when the run was cancelled before the end: the
	// objects judged are a prefix of the listing order.
	Interrupted bool          `json:"interrupted,omitempty"`
	Elapsed     time.Duration `json:"-"`
}

// Complete reports whether every resource was listed in full and judged.
func (c *Coverage) Complete() bool {
	if c.Interrupted {
		return false
	}
	for _, r := range c.Resources {
		if !r.Complete {
			return false
		}
	}
	return true
}

// Judged is how many objects were judged in all.
func (c *Coverage) Judged() int {
	n := 0
	for _, r := range c.Resources {
		n += r.Judged
	}
	return n
}

// ResourceCoverage is what a run covered of one resource.
type ResourceCoverage struct {
	Target Target `json:"-"`
	// Listed objects were read from the API server; Judged ones were
	// judged and handed to the sink (fewer when the run was interrupted).
	Listed int `json:"listed"`
	Judged int `json:"judged"`
	// Complete is true when every object was listed and judged.
	Complete bool `json:"complete"`
	// Err says why the resource was not listed in full (a forbidden LIST,
	// an expired continue token); the run goes on with the next resource.
	Err error `json:"-"`
	// Forbidden is true when the LIST was refused (403).
	Forbidden bool `json:"forbidden,omitempty"`
}

// item is one listed object on its way to a worker.
type item struct {
	seq    int
	target int
	obj    *unstructured.Unstructured
}

// judged is one object's result on its way back to listing order.
type judged struct {
	seq, target int
	res         *ObjectResult
	err         error
}

// Run lists every target, judges each object as it streams in with a pool
// of workers, and hands the results to sink in listing order. A LIST that
// fails (forbidden, say) is recorded in the coverage and the run goes on
// with the next resource. Cancelling ctx stops the run: the coverage then
// says what was judged, a prefix of the listing order. The error is a
// judgement's or the sink's, which stops the run; an unauthorized LIST
// (expired credentials) stops it too.
func (a *Auditor) Run(ctx context.Context, in Input, sink Sink) (*Coverage, error) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := a.opts.Workers
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	cov := &Coverage{Resources: make([]ResourceCoverage, len(in.Targets))}
	for i, t := range in.Targets {
		cov.Resources[i].Target = t
	}
	progress := in.Progress
	if progress == nil {
		progress = &Progress{}
	}
	items := make(chan item, 4*workers)
	results := make(chan judged, 4*workers)
	listed := make(chan error, 1)
	go func() { listed <- a.list(ctx, in, cov, progress, items) }()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				res, err := a.Judge(ctx, in.Targets[it.target], it.obj, in.State)
				results <- judged{seq: it.seq, target: it.target, res: res, err: err}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	err := a.emit(results, cov, progress, sink, cancel)
	listErr := <-listed
	cov.Elapsed = time.Since(start)
	if err == nil {
		err = listErr
	}
	return a.finish(ctx, cov, err)
}

// finish marks what was covered and tells an interruption from a failure.
func (a *Auditor) finish(ctx context.Context, cov *Coverage, err error) (*Coverage, error) {
	for i := range cov.Resources {
		r := &cov.Resources[i]
		r.Complete = r.Complete && r.Judged == r.Listed
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		cov.Interrupted = true
		return cov, nil
	}
	return cov, err
}

// list reads every target in order and sends its objects to items, then
// closes it. A failed LIST is recorded and the next target listed; an
// unauthorized one (expired credentials) stops the listing.
func (a *Auditor) list(ctx context.Context, in Input, cov *Coverage, progress *Progress, items chan<- item) error {
	defer close(items)
	seq := 0
	for i, t := range in.Targets {
		progress.Resource.Store(t.String())
		r := &cov.Resources[i]
		err := in.Lister.List(ctx, t, func(obj *unstructured.Unstructured) error {
			select {
			case items <- item{seq: seq, target: i, obj: obj}:
			case <-ctx.Done():
				return ctx.Err()
			}
			seq++
			r.Listed++
			progress.Listed.Add(1)
			return nil
		})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case apierrors.IsUnauthorized(err):
			return err
		case err != nil:
			r.Err, r.Forbidden = err, apierrors.IsForbidden(err)
		default:
			r.Complete = true
		}
	}
	return nil
}

// emit hands results to sink in listing order. After the first error (a
// judgement's, the sink's) nothing more is emitted, the run is cancelled
// and results are drained, so the workers and the lister end.
func (a *Auditor) emit(results <-chan judged, cov *Coverage, progress *Progress, sink Sink, cancel context.CancelFunc) error {
	pending := map[int]judged{}
	next := 0
	var err error
	for j := range results {
		pending[j.seq] = j
		for err == nil {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if err = p.err; err == nil {
				err = a.deliver(p, cov, progress, sink)
			}
			if err != nil {
				cancel()
			}
		}
	}
	return err
}

// deliver counts one judged object and hands it to sink when some policy
// selected it.
func (a *Auditor) deliver(j judged, cov *Coverage, progress *Progress, sink Sink) error {
	cov.Resources[j.target].Judged++
	progress.Judged.Add(1)
	if len(j.res.Results) == 0 {
		return nil
	}
	if j.res.Denied() {
		progress.Denied.Add(1)
	}
	return sink.Object(j.res)
}
