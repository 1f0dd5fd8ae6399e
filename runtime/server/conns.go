package server

import (
	"net"
	"net/http"
	"sync"
)

// connTracker knows which connections are new or serving a request.
type connTracker struct {
	mu     sync.Mutex
	states map[net.Conn]http.ConnState
}

func (t *connTracker) track(c net.Conn, state http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[net.Conn]http.ConnState{}
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(t.states, c)
	default:
		t.states[c] = state
	}
}

// busy counts connections that are new (may still send a request) or active.
func (t *connTracker) busy() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, st := range t.states {
		if st == http.StateNew || st == http.StateActive {
			n++
		}
	}
	return n
}
