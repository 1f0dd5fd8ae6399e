package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// measurement is one tool's run at one stage.
type measurement struct {
	tool    string
	objects int
	wall    time.Duration
	// auditPhase is admitc's own account of listing and judging (its
	// table's closing line); zero for Kyverno.
	auditPhase time.Duration
	maxRSSKiB  int64
	outBytes   int64
	err        error
}

func (m measurement) rate() float64 { return float64(m.objects) / m.wall.Seconds() }

func (m measurement) peakRSSMiB() float64 { return float64(m.maxRSSKiB) / 1024 }

func (m measurement) print() {
	if m.err != nil {
		fmt.Printf("  %-8s %6d pods: %v\n", m.tool, m.objects, m.err)
		return
	}
	phase := ""
	if m.auditPhase > 0 {
		phase = fmt.Sprintf(", audit phase %s (%.0f objects/s)", m.auditPhase.Round(time.Millisecond), float64(m.objects)/m.auditPhase.Seconds())
	}
	fmt.Printf("  %-8s %6d pods: %s wall (%.1f objects/s)%s, peak RSS %.0f MiB, output %.1f MB\n",
		m.tool, m.objects, m.wall.Round(time.Millisecond), m.rate(), phase, m.peakRSSMiB(), float64(m.outBytes)/1e6)
}

// timed runs cmd and measures its wall time and peak RSS (getrusage's
// ru_maxrss of the child).
func timed(cmd *exec.Cmd) (time.Duration, int64, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	return wall, rss, err
}

// judgedIn reads admitc's closing line: "N object(s) judged in 12.3s".
var judgedIn = regexp.MustCompile(`(\d+) object\(s\) judged in (\S+) \(`)

// auditWithAdmitc runs admitc audit on the policies, writing the Reports
// into a directory and the table to a file.
func auditWithAdmitc(cfg runConfig, kubeconfig string, pods int) measurement {
	m := measurement{tool: "admitc", objects: pods}
	out := filepath.Join(cfg.work, fmt.Sprintf("admitc-%d", pods))
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(cfg.admitc, "audit", "--kubeconfig", kubeconfig, "-p", cfg.policies, "--out", out)
	cmd.Env = append(os.Environ(), cfg.admitcEnv...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	m.wall, m.maxRSSKiB, m.err = timed(cmd)
	if exit, ok := m.err.(*exec.ExitError); ok && exit.ExitCode() == 1 {
		m.err = nil // something would be denied: expected
	}
	if m.err != nil {
		m.err = fmt.Errorf("%v: %s", m.err, stderr.String())
		return m
	}
	if g := judgedIn.FindStringSubmatch(stdout.String()); g != nil {
		m.auditPhase, _ = time.ParseDuration(g[2])
		if n, _ := strconv.Atoi(g[1]); n < pods {
			m.err = fmt.Errorf("judged %d objects, want %d or more", n, pods)
		}
	}
	m.outBytes = dirSize(out) + int64(stdout.Len())
	return m
}

// applyWithKyverno runs kyverno apply --cluster --policy-report on the
// same policies, its report written to a file.
func applyWithKyverno(cfg runConfig, kubeconfig string, pods int) measurement {
	m := measurement{tool: "kyverno", objects: pods}
	f, err := os.Create(filepath.Join(cfg.work, fmt.Sprintf("kyverno-%d.yaml", pods)))
	if err != nil {
		m.err = err
		return m
	}
	defer f.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(cfg.kyverno, "apply", cfg.policies, "--cluster", "--policy-report")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = f, &stderr
	m.wall, m.maxRSSKiB, m.err = timed(cmd)
	if exit, ok := m.err.(*exec.ExitError); ok && exit.ExitCode() == 1 {
		m.err = nil // violations found: expected
	}
	if m.err != nil {
		m.err = fmt.Errorf("%v: %s", m.err, tail(stderr.String(), 400))
	}
	if info, err := f.Stat(); err == nil {
		m.outBytes = info.Size()
	}
	return m
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
