package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// health is what the webhook knows of its API server connection: whether
// it answers, when an informer last saw an event, and the last watch error
// logged per kind (so a repeated error is logged once).
type health struct {
	logger    *slog.Logger
	start     time.Time
	reachable atomic.Bool
	// lastEvent is the Unix nanoseconds of the last informer event (0: none).
	lastEvent atomic.Int64

	mu     sync.Mutex
	logged map[string]string
}

func (h *health) init(logger *slog.Logger) {
	h.logger, h.start, h.logged = logger, time.Now(), map[string]string{}
	h.reachable.Store(true)
}

// lastEventAge is the time since the last informer event, or since start
// when there has been none.
func (h *health) lastEventAge() time.Duration {
	if t := h.lastEvent.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return time.Since(h.start)
}

// event records an informer event: the API server is reachable.
func (h *health) event() {
	h.lastEvent.Store(time.Now().UnixNano())
	h.markReachable()
}

func (h *health) markReachable() {
	if h.reachable.CompareAndSwap(false, true) {
		h.logger.Info("API server reachable again; the caches catch up", "phase", "cluster")
	}
}

// markUnreachable records that the API server does not answer: decisions
// go on from the last synced state, and the log says so once.
func (h *health) markUnreachable(err error) {
	if h.reachable.CompareAndSwap(true, false) {
		h.logger.Warn("API server unreachable; deciding from the last synced state", "phase", "cluster",
			"error", err.Error(), "lastEventAgeSeconds", h.lastEventAge().Seconds())
	}
}

// watchError handles an informer's list or watch error: a watch closing
// is routine; an answer from the API server (forbidden, not found) is
// logged once per kind and message; anything else means it cannot be
// reached.
func (h *health) watchError(kind string, err error) {
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return
	case isAPIStatus(err):
		h.mu.Lock()
		repeated := h.logged[kind] == err.Error()
		h.logged[kind] = err.Error()
		h.mu.Unlock()
		if !repeated {
			h.logger.Error("cannot list or watch "+kind+"; check the webhook's ClusterRole, and its Role in the namespace a paramRef names", "phase", "cluster", "kind", kind, "error", err.Error())
		}
	default:
		h.markUnreachable(err)
	}
}

func isAPIStatus(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}

// probe asks the API server whether it answers, and says whether it did
// (true without a probe).
func (s *State) probe(ctx context.Context) bool {
	if s.cfg.Probe == nil {
		return true
	}
	probeCtx, cancel := context.WithTimeout(ctx, s.cfg.LookupTimeout)
	defer cancel()
	err := s.cfg.Probe(probeCtx)
	switch {
	case err == nil || isAPIStatus(err):
		s.health.markReachable()
		return true
	case ctx.Err() == nil:
		s.health.markUnreachable(err)
	}
	return false
}
