package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// target is one server under the ramp: a name, its URL and, for memory, its PID.
type target struct {
	name, url string
	pid       int
	client    *http.Client
	steps     map[int]*result
	sustained int
	failed    int // consecutive steps over the bound
}

type targets []*target

func (t *targets) String() string { return "" }

// Set reads name=URL or name=URL@PID.
func (t *targets) Set(v string) error {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("-target %q: want name=https://host:port/path[@pid]", v)
	}
	u, pidText, hasPID := strings.Cut(rest, "@")
	tg := &target{name: name, url: u, steps: map[int]*result{}}
	if hasPID {
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			return fmt.Errorf("-target %q: pid %q is not a number", v, pidText)
		}
		tg.pid = pid
	}
	*t = append(*t, tg)
	return nil
}

// ramp finds, for each target, the highest rate it sustains with p99 within
// the bound and no error or non-2xx answer.
func ramp(args []string) error {
	var ts targets
	fs := flag.NewFlagSet("ramp", flag.ExitOnError)
	ca := fs.String("ca", "", "CA certificate of the servers")
	review := fs.String("review", "", "AdmissionReview JSON file to replay")
	fs.Var(&ts, "target", "name=https://127.0.0.1:PORT/PATH[@PID], repeated; the first is the baseline")
	start := fs.Int("start", 500, "first rate (reviews/s)")
	step := fs.Int("step", 500, "rate increment")
	maxRate := fs.Int("max", 12000, "highest rate tried (at most 20000)")
	stepDuration := fs.Duration("step-duration", 5*time.Second, "how long each step sends (at most 120s)")
	bound := fs.Duration("p99", 10*time.Millisecond, "the p99 a sustained rate keeps")
	conns := fs.Int("conns", 16, "keep-alive connections per target")
	_ = fs.Parse(args)
	if len(ts) == 0 {
		return errors.New("give at least one -target")
	}
	if *start <= 0 || *step <= 0 || *maxRate > 20000 || *stepDuration <= 0 || *stepDuration > 120*time.Second {
		return errors.New("-start and -step must be positive, -max at most 20000, -step-duration at most 120s")
	}
	body, err := os.ReadFile(*review)
	if err != nil {
		return err
	}
	for _, t := range ts {
		u, err := url.Parse(t.url)
		if err != nil || u.Scheme != "https" {
			return fmt.Errorf("target %s: the URL must be https, got %q", t.name, t.url)
		}
		if err := loopback(u.Host); err != nil {
			return err
		}
		if t.client, err = newClient(*ca, *conns); err != nil {
			return err
		}
		warm(t.client, t.url, body, *conns)
	}
	rates := []int{*start}
	for r := *start + *step; r <= *maxRate; r += *step {
		rates = append(rates, r)
	}
	for _, must := range []int{1000, 2000} {
		if !contains(rates, must) {
			rates = insertSorted(rates, must)
		}
	}
	for _, rate := range rates {
		active := 0
		for _, t := range ts {
			// A target is ramped until two steps in a row miss the bound
			// (one noisy step does not end its ramp), and always through
			// 2,000/s for the comparison there.
			if t.failed >= 2 && rate > 2000 {
				continue
			}
			active++
			c := config{url: t.url, name: t.name, rate: rate, duration: *stepDuration, conns: *conns, pid: t.pid}
			r := fire(t.client, c, body)
			r.rssEnd = rss(t.pid)
			t.steps[rate] = r
			fmt.Fprintln(os.Stderr, r.String(c))
			if r.errors == 0 && r.non2xx == 0 && r.percentile(99) <= *bound && r.ok >= int(0.95*float64(r.sent)) {
				t.sustained, t.failed = rate, 0
			} else {
				t.failed++
			}
		}
		if active == 0 {
			break
		}
	}
	report(os.Stdout, ts, *bound)
	return nil
}

// warm sends n reviews to open the connections before measuring.
func warm(client *http.Client, u string, body []byte, n int) {
	for i := 0; i < n; i++ {
		if resp, err := client.Post(u, "application/json", bytes.NewReader(body)); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

// report prints one table: per target the sustained rate, p50/p99 at
// 1,000/s and 2,000/s, peak RSS, and the ratios to the baseline.
func report(w io.Writer, ts targets, bound time.Duration) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
	at := func(t *target, rate int, p float64) string {
		r := t.steps[rate]
		if r == nil {
			return "-"
		}
		return ms(r.percentile(p)) + " ms"
	}
	base := ts[0]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "target\tsustained (p99 <= %s, 0 errors)\tvs %s\tp50 @1000/s\tp99 @1000/s\tp50 @2000/s\tp99 @2000/s\tp99 @2000/s vs %s\tRSS at end\t\n", bound, base.name, base.name)
	for _, t := range ts {
		ratio, p99ratio := "-", "-"
		if base.sustained > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*float64(t.sustained)/float64(base.sustained))
		}
		if b, r := base.steps[2000], t.steps[2000]; b != nil && r != nil && b.percentile(99) > 0 {
			p99ratio = fmt.Sprintf("%.2f×", float64(r.percentile(99))/float64(b.percentile(99)))
		}
		rssText := "-"
		if t.pid > 0 {
			peak := 0
			for _, r := range t.steps {
				peak = max(peak, r.rssEnd)
			}
			rssText = fmt.Sprintf("%d MiB", peak/1024)
		}
		fmt.Fprintf(tw, "%s\t%d/s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", t.name, t.sustained, ratio,
			at(t, 1000, 50), at(t, 1000, 99), at(t, 2000, 50), at(t, 2000, 99), p99ratio, rssText)
	}
	_ = tw.Flush()
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func insertSorted(xs []int, x int) []int {
	for i, v := range xs {
		if v > x {
			return append(xs[:i], append([]int{x}, xs[i:]...)...)
		}
	}
	return append(xs, x)
}
