package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"
)

// outcome is one review sent: its status (0 for a transport error), when
// it was written to a connection (zero: never), and when it ended.
type outcome struct {
	code       int
	err        error
	wrote, end time.Time
}

// send posts one review, tracing when it is written: the time before that
// is spent in the client (waiting for a connection or an HTTP/2 stream),
// the time after it in the server.
func send(client *http.Client, url string, body []byte) outcome {
	var o outcome
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return outcome{err: err, end: time.Now()}
	}
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		// A request refused (REFUSED_STREAM) is sent again: only the
		// last attempt counts.
		GetConn:      func(string) { o.wrote = time.Time{} },
		WroteRequest: func(httptrace.WroteRequestInfo) { o.wrote = time.Now() },
	}))
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.code = resp.StatusCode
	}
	o.err, o.end = err, time.Now()
	return o
}

// errorKind names what went wrong with a review: never written (the
// client's timeout passed while it waited for a connection or a stream),
// refused (a connection closed or reset before the request was written,
// or its stream refused: the server shed it, without reading it) or
// unanswered (written, no answer).
func (o outcome) errorKind() string {
	var netErr net.Error
	switch {
	case o.err == nil:
		return ""
	case strings.Contains(o.err.Error(), "REFUSED_STREAM"):
		return "refused"
	case !o.wrote.IsZero():
		return "unanswered"
	case errors.As(o.err, &netErr) && netErr.Timeout():
		return "never_written"
	default:
		return "refused"
	}
}
