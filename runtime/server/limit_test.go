package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/admitc/admitc/internal/certs"
)

// serveTLS runs a server for cfg on 127.0.0.1 with a fresh certificate and
// returns it, its address and a TLS configuration that trusts it.
func serveTLS(t *testing.T, cfg Config) (*Server, string, *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	b, err := certs.Generate(certs.Request{DNSNames: []string{"localhost"}, Days: 1})
	require.NoError(t, err)
	require.NoError(t, certs.Write(dir, b, true))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b.CA))
	cfg.Certs, err = NewCertSource(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), nil)
	require.NoError(t, err)
	cfg.Engine = exampleEngine(t)
	s := New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx, 0)
	})
	return s, l.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"}
}

// postAll sends n reviews at once and returns their status codes (0 for
// a transport error) once all are answered or ctx ends.
func postAll(ctx context.Context, t *testing.T, client *http.Client, url string, n int) []int {
	body, err := os.ReadFile("../../examples/reviews/review-pod.json")
	require.NoError(t, err)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			require.NoError(t, err)
			resp, err := client.Do(req)
			if err != nil {
				return
			}
			codes[i] = resp.StatusCode
			resp.Body.Close()
		})
	}
	wg.Wait()
	return codes
}

func count(codes []int, code int) int {
	n := 0
	for _, c := range codes {
		if c == code {
			n++
		}
	}
	return n
}

// TestStreamsAndConnectionsAreCapped: with evaluation held, twelve reviews
// sent at once over HTTP/2 reach the handler four at a time (the streams
// one connection may carry); the client opens another connection for the
// rest, as the API server's does, and has it closed at once (one
// connection allowed): those reviews fail fast, and the API server would
// apply the failure policy.
func TestStreamsAndConnectionsAreCapped(t *testing.T) {
	s, addr, tlsCfg := serveTLS(t, Config{MaxInflight: 1, MaxQueueWait: 10 * time.Second, MaxConcurrentStreams: 4, MaxConnections: 1})
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true}}
	resp, err := client.Get("https://" + addr + "/healthz") // the connection and its settings
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor)

	s.slots <- struct{}{} // evaluation held: every review waits for a slot, its stream open
	done := make(chan []int)
	go func() { done <- postAll(context.Background(), t, client, "https://"+addr+"/validate?timeout=15s", 12) }()
	require.Eventually(t, func() bool { return s.inflight.Load() == 4 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	assert.EqualValues(t, 4, s.inflight.Load(), "reviews in the handler: the streams one connection carries")
	<-s.slots
	codes := <-done
	assert.Equal(t, 4, count(codes, http.StatusOK), "%v", codes)
	assert.Equal(t, 8, count(codes, 0), "the others' connections were closed: %v", codes)
	assert.Positive(t, testutil.ToFloat64(s.cfg.Metrics.ConnectionsShed))
}

// TestStreamsOverTheCapAreRefused: a client that ignores the server's
// limit and opens twelve streams on one connection has eight refused
// (RST_STREAM), while four reach the handler; the refusals are counted.
func TestStreamsOverTheCapAreRefused(t *testing.T) {
	s, addr, tlsCfg := serveTLS(t, Config{MaxInflight: 1, MaxQueueWait: 10 * time.Second, MaxConcurrentStreams: 4})
	s.slots <- struct{}{} // evaluation held
	defer func() { <-s.slots }()
	cfg := tlsCfg.Clone()
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", addr, cfg)
	require.NoError(t, err)
	defer conn.Close()
	fr := rawHTTP2(t, conn)
	var hdrs bytes.Buffer
	enc := hpack.NewEncoder(&hdrs)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/validate?timeout=15s"}, {"content-type", "application/json"}} {
		require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	body, err := os.ReadFile("../../examples/reviews/review-pod.json")
	require.NoError(t, err)
	for i := range 12 {
		id := uint32(2*i + 1)
		require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hdrs.Bytes(), EndHeaders: true}))
		require.NoError(t, fr.WriteData(id, true, body))
	}
	refused := 0
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	for refused < 8 {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "refused %d streams", refused)
		// A refused stream is reset (REFUSED_STREAM, or PROTOCOL_ERROR
		// once the client knows the limit), its body then STREAM_CLOSED.
		if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.ErrCode != http2.ErrCodeStreamClosed {
			t.Logf("stream %d reset: %v", rst.StreamID, rst.ErrCode)
			refused++
		}
	}
	// The four accepted streams reach the handler in their own
	// goroutines, which a busy machine may start after the refusals.
	require.Eventually(t, func() bool { return s.inflight.Load() == 4 }, 5*time.Second, 10*time.Millisecond, "reviews in the handler: %d", s.inflight.Load())
	time.Sleep(100 * time.Millisecond)
	assert.EqualValues(t, 4, s.inflight.Load(), "reviews in the handler")
	assert.Equal(t, 8.0, testutil.ToFloat64(s.cfg.Metrics.HTTP2Errors.WithLabelValues("stream_PROTOCOL_ERROR_over_max_streams")))
}

// rawHTTP2 starts an HTTP/2 connection by hand: preface and settings,
// the server's settings read and acknowledged.
func rawHTTP2(t *testing.T, conn net.Conn) *http2.Framer {
	t.Helper()
	_, err := conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = nil
	require.NoError(t, fr.WriteSettings())
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err)
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			require.NoError(t, fr.WriteSettingsAck())
			return fr
		}
	}
}

// TestConnectionsOverTheCapAreClosedAtOnce: with two connections open, a
// third is closed before its TLS handshake; once one closes, a new one is
// served.
func TestConnectionsOverTheCapAreClosedAtOnce(t *testing.T) {
	s, addr, tlsCfg := serveTLS(t, Config{MaxConnections: 2})
	dial := func() (*tls.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tlsCfg)
	}
	first, err := dial()
	require.NoError(t, err)
	second, err := dial()
	require.NoError(t, err)
	defer second.Close()

	start := time.Now()
	_, err = dial()
	require.Error(t, err, "a third connection")
	assert.Less(t, time.Since(start), time.Second, "closed at once, not left to time out")
	assert.Equal(t, 1.0, testutil.ToFloat64(s.cfg.Metrics.ConnectionsShed))
	assert.Equal(t, 2, len(s.open))

	first.Close()
	require.Eventually(t, func() bool {
		c, err := dial()
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "a place freed")
}
