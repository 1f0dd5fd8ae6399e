package cluster

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// listWatch is how a watchedCache reads its objects from the API server:
// one list and watch, already narrowed to the objects it keeps.
type listWatch struct {
	list  func(context.Context, metav1.ListOptions) (k8sruntime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	// client is the client behind list and watch: a fake client cannot
	// stream an initial list, and the reflector must know it.
	client any
}

// watchedCache is the store of one list and watch (Namespaces, or the
// parameter objects one paramRef can select), filled by a client-go
// reflector, and whether it is in sync with the API server.
//
// It is in sync once a list has been stored since its last break: a list
// or watch call that failed, or a watch that ended with an error. A watch
// that simply ends (its timeout) is not a break: the reflector watches again
// from the last resource version, and nothing is missed. After a break the
// store keeps serving what it holds (decisions go on from the last synced
// state) until restart runs a fresh reflector, whose list replaces it; the
// old reflector's writes are dropped from then on (generations).
type watchedCache struct {
	kind     string
	lw       listWatch
	expected k8sruntime.Object
	store    cache.Indexer
	health   *health

	mu sync.Mutex
	// gen is the generation of the reflector whose writes are kept.
	gen    int
	cancel context.CancelFunc
	// listed: a list has been stored at least once; synced: since the last
	// break; broken: when the last break happened (zero when synced).
	listed, synced bool
	broken         time.Time
	// restartAfter is the wait before the next restart of a broken cache,
	// doubled by each restart (up to maxRestartBackoff), reset on sync.
	restartAfter time.Duration
	lastRestart  time.Time
}

// Restarts of a broken cache wait at least minRestartBackoff after the
// last, doubling up to maxRestartBackoff while the cache does not sync.
const (
	minRestartBackoff = time.Second
	maxRestartBackoff = 30 * time.Second
)

func newWatchedCache(kind string, lw listWatch, expected k8sruntime.Object, h *health) *watchedCache {
	return &watchedCache{kind: kind, lw: lw, expected: expected, health: h, restartAfter: minRestartBackoff,
		store: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
}

// run starts a reflector filling c until ctx ends or stop is called.
func (c *watchedCache) run(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked(ctx)
}

func (c *watchedCache) startLocked(ctx context.Context) {
	if c.cancel != nil {
		c.cancel()
	}
	c.gen++
	ctx, c.cancel = context.WithCancel(ctx)
	gen := c.gen
	// A controller runs the reflector with a watch error handler of ours
	// (client-go's own logs every retry through klog): the errors are
	// seen, classified and logged once by generationLW.
	ctrl := cache.New(&cache.Config{
		Queue:                        &generationStore{c: c, gen: gen, closed: make(chan struct{})},
		ListerWatcher:                &generationLW{c: c, gen: gen},
		Process:                      func(any, bool) error { return nil },
		ObjectType:                   c.expected,
		ObjectDescription:            c.kind,
		WatchErrorHandlerWithContext: func(context.Context, *cache.Reflector, error) {},
	})
	c.lastRestart = time.Now()
	go ctrl.RunWithContext(ctx)
}

// stop stops c's reflector.
func (c *watchedCache) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
	c.gen++
}

// restartIfDue runs a fresh reflector on a broken cache, its list at once,
// when the backoff since its last restart has passed; it reports whether
// it did.
func (c *watchedCache) restartIfDue(ctx context.Context, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.synced || c.cancel == nil || now.Sub(c.lastRestart) < c.restartAfter {
		return false
	}
	c.restartAfter = min(2*c.restartAfter, maxRestartBackoff)
	c.startLocked(ctx)
	return true
}

// state says whether c has listed once and whether it is in sync now.
func (c *watchedCache) state() (listed, synced bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listed, c.synced
}

// markBroken records a break of generation gen.
func (c *watchedCache) markBroken(gen int, err error) {
	c.mu.Lock()
	current := gen == c.gen
	if current && c.synced {
		c.synced, c.broken = false, time.Now()
	}
	c.mu.Unlock()
	if current && err != nil {
		c.health.watchError(c.kind, err)
	}
}

// write applies a reflector's change to the store if its generation is
// the current one; replace marks the cache in sync.
func (c *watchedCache) write(gen int, replace bool, f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return nil
	}
	if err := f(); err != nil {
		return err
	}
	if replace {
		c.listed, c.synced, c.broken, c.restartAfter = true, true, time.Time{}, minRestartBackoff
	}
	c.health.event()
	return nil
}

// generationStore is the store as one reflector generation writes it. It
// is the controller's queue in name only: writes go to the store at once
// (a list is in the store when Replace returns), and Pop has nothing to
// give until the controller stops.
type generationStore struct {
	c      *watchedCache
	gen    int
	closed chan struct{}
	once   sync.Once
}

var _ cache.Queue = (*generationStore)(nil)

// Pop implements cache.Queue: it waits for Close.
func (s *generationStore) Pop(cache.PopProcessFunc) (any, error) {
	<-s.closed
	return nil, cache.ErrFIFOClosed
}

// Close implements cache.Queue.
func (s *generationStore) Close() { s.once.Do(func() { close(s.closed) }) }

// HasSynced implements cache.Queue: a list has been stored.
func (s *generationStore) HasSynced() bool {
	listed, _ := s.c.state()
	return listed
}

// HasSyncedChecker implements cache.Queue; the controller does not use it.
func (s *generationStore) HasSyncedChecker() cache.DoneChecker { return nil }

func (s *generationStore) Add(obj any) error {
	return s.c.write(s.gen, false, func() error { return s.c.store.Add(obj) })
}

func (s *generationStore) Update(obj any) error {
	return s.c.write(s.gen, false, func() error { return s.c.store.Update(obj) })
}

func (s *generationStore) Delete(obj any) error {
	return s.c.write(s.gen, false, func() error { return s.c.store.Delete(obj) })
}

func (s *generationStore) Replace(items []any, rv string) error {
	return s.c.write(s.gen, true, func() error { return s.c.store.Replace(items, rv) })
}

// Resync is never asked for: the reflectors run without a resync period.
func (s *generationStore) Resync() error { return nil }

// generationLW is c's list and watch as one reflector generation calls
// them: every failure, and a watch ending with an error, is a break.
type generationLW struct {
	c   *watchedCache
	gen int
}

var _ cache.ListerWatcherWithContext = (*generationLW)(nil)

func (l *generationLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
	obj, err := l.c.lw.list(ctx, opts)
	if err != nil && ctx.Err() == nil {
		l.c.markBroken(l.gen, err)
	} else if err == nil {
		l.c.health.markReachable()
	}
	return obj, err
}

func (l *generationLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.c.lw.watch(ctx, opts)
	if err != nil {
		if ctx.Err() == nil {
			l.c.markBroken(l.gen, err)
		}
		return nil, err
	}
	l.c.health.markReachable()
	return newErrorWatch(w, func(err error) { l.c.markBroken(l.gen, err) }), nil
}

// List and Watch serve a caller without a context; the reflector uses the
// context variants.
func (l *generationLW) List(opts metav1.ListOptions) (k8sruntime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *generationLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported tells the reflector whether the client
// can stream its initial list (a fake client cannot).
func (l *generationLW) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.c.lw.client)
}

// errorWatch passes a watch's events on and reports an error event.
type errorWatch struct {
	in      watch.Interface
	out     chan watch.Event
	done    chan struct{}
	once    sync.Once
	onError func(error)
}

func newErrorWatch(in watch.Interface, onError func(error)) *errorWatch {
	w := &errorWatch{in: in, out: make(chan watch.Event), done: make(chan struct{}), onError: onError}
	go w.loop()
	return w
}

func (w *errorWatch) loop() {
	defer close(w.out)
	for e := range w.in.ResultChan() {
		if e.Type == watch.Error {
			w.onError(apierrors.FromObject(e.Object))
		}
		select {
		case w.out <- e:
		case <-w.done:
			return
		}
	}
}

// ResultChan implements watch.Interface.
func (w *errorWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop implements watch.Interface.
func (w *errorWatch) Stop() {
	w.once.Do(func() { close(w.done) })
	w.in.Stop()
}
