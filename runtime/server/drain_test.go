package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/runtime/server"
)

// drainTally counts what keep-alive clients saw while the server stopped.
type drainTally struct {
	// answered got 200 with a review; closing of them said Connection: close.
	answered, closing atomic.Int64
	// refused failed before the request was written: a clean close.
	refused atomic.Int64
	// dropped were written and then got no answer, or a wrong one.
	dropped atomic.Int64
}

// sendOne posts body once and tallies the outcome.
func (d *drainTally) sendOne(t *testing.T, client *http.Client, url string, body []byte) {
	// wrote is per attempt: the transport retries only a request the server
	// declared unprocessed (an HTTP/2 GOAWAY), on a new connection.
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		GetConn:      func(string) { wrote.Store(false) },
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := client.Do(req)
	switch {
	case err != nil && !wrote.Load():
		d.refused.Add(1)
		return
	case err != nil:
		t.Logf("written request dropped: %v", err)
		d.dropped.Add(1)
		return
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(data, []byte(`"allowed":true`)) {
		t.Logf("bad answer %d (%v): %s", resp.StatusCode, err, data)
		d.dropped.Add(1)
		return
	}
	d.answered.Add(1)
	if resp.Close {
		d.closing.Add(1)
	}
}

func TestShutdownAnswersEveryRequestWrittenOnKeepAliveConnections(t *testing.T) {
	for name, h2 := range map[string]bool{"http1.1": false, "h2": true} {
		t.Run(name, func(t *testing.T) {
			f := start(t, server.Config{})
			tlsCfg := f.client.Transport.(*http.Transport).TLSClientConfig
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: tlsCfg, ForceAttemptHTTP2: h2, MaxIdleConnsPerHost: 8, IdleConnTimeout: time.Minute,
			}}
			body := review(t, "manifests/good.json", "", "")
			var tally drainTally
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						tally.sendOne(t, client, "https://"+f.addr+"/validate", body)
					}
				})
			}
			time.Sleep(300 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, f.srv.Shutdown(ctx, 500*time.Millisecond))
			require.NoError(t, <-f.done)
			time.Sleep(100 * time.Millisecond) // clients see the closed listener
			close(stop)
			wg.Wait()

			t.Logf("answered %d (%d with Connection: close), refused before writing %d, dropped %d",
				tally.answered.Load(), tally.closing.Load(), tally.refused.Load(), tally.dropped.Load())
			assert.Positive(t, tally.answered.Load())
			assert.Positive(t, tally.refused.Load(), "the clients kept sending until the server stopped")
			assert.Zero(t, tally.dropped.Load(), "a request written on an open connection was dropped")
			if !h2 {
				assert.Positive(t, tally.closing.Load(), "answers during the drain close their connection")
			}
		})
	}
}
