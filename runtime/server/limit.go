package server

import (
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxConnections is how many connections may be open at once by
// default. The API server sends its reviews over a few HTTP/2 connections
// (its client opens another only when one carries MaxConcurrentStreams
// reviews), the kubelet's probes and a scrape take one each for a moment:
// more than this many is a flood, and each connection costs memory before
// its first request is read.
const DefaultMaxConnections = 32

// DefaultMaxConcurrentStreams is how many reviews a client may send at
// once on one HTTP/2 connection by default (Go's own default is 250). With
// DefaultMaxConnections it bounds the requests held at once (512), each a
// goroutine and its buffers, whatever the clients send: past capacity the
// streams beyond it wait in the client, not in the webhook's memory. At
// five times capacity on 2 cores (GOGC 400, no memory limit), 256 streams
// held RSS near 210 MiB, 512 near 270 MiB, 1,024 near 370 MiB; in a
// container the memory limit holds the heap down (see tuneGC in serve).
const DefaultMaxConcurrentStreams = 16

// limitListener accepts at most cap(open) connections at once; one more is
// closed as soon as it is accepted, before its TLS handshake (shed): the
// client sees its connection reset at once, and the API server applies the
// webhook's failurePolicy instead of waiting for its timeout.
type limitListener struct {
	net.Listener
	open chan struct{}
	shed prometheus.Counter
}

// newLimitListener holds one token of open per connection it returns.
func newLimitListener(l net.Listener, open chan struct{}, shed prometheus.Counter) *limitListener {
	return &limitListener{Listener: l, open: open, shed: shed}
}

// Accept returns the next connection within the bound, closing those over it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.open <- struct{}{}:
			return &limitedConn{Conn: c, release: func() { <-l.open }}, nil
		default:
			_ = c.Close()
			l.shed.Inc()
		}
	}
}

// limitedConn gives its place back once, when it closes.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its place.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
