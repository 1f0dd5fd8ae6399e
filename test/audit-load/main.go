// Command audit-load measures `admitc audit` on a kube-apiserver holding
// many pods (make audit-load): it starts etcd and kube-apiserver v1.37.2
// on loopback, creates NAMESPACES namespaces and fills them with pods in
// stages (5,000 then 20,000 by default), and at each stage runs `admitc
// audit` with ~40 Pod Security and best-practice Kyverno ClusterPolicies
// (examples/kyverno-pattern), writing the openreports.io Reports as files,
// and, when the Kyverno CLI is built (make kyverno-cli), `kyverno apply
// --cluster --policy-report` with the same policies. It prints objects per
// second (over the whole run, and over the audit itself: listing and
// judging, without compiling the policies) and peak RSS, and fails when
// admitc's peak RSS is over -max-rss or grows more than -max-rss-growth
// between the first and the last stage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/admitc/admitc/internal/testcluster"
)

func main() {
	bin := flag.String("bin", "test/e2e/.bin/v1.37.2", "directory holding etcd and kube-apiserver")
	admitc := flag.String("admitc", "bin/admitc", "the admitc binary")
	kyverno := flag.String("kyverno", "test/kyverno-cli/.bin/kyverno", "the Kyverno CLI (skipped when missing)")
	kyvernoStages := flag.String("kyverno-stages", "5000", "stages at which the Kyverno CLI also runs (it holds every report in memory: GBs)")
	stagesFlag := flag.String("stages", "5000,20000", "pod counts at which to audit")
	namespaces := flag.Int("namespaces", 50, "namespaces the pods are spread over")
	maxRSS := flag.Int("max-rss", 256, "fail when admitc's peak RSS is over this many MiB")
	maxGrowth := flag.Float64("max-rss-growth", 1.2, "fail when admitc's peak RSS grows more than this between the first and the last stage")
	hold := flag.Bool("hold", false, "after the stages, keep the cluster running (its kubeconfig is printed) until Ctrl-C")
	admitcEnv := flag.String("admitc-env", "", "environment variables for admitc, comma-separated (GOMEMLIMIT=160MiB)")
	flag.Parse()
	stages, err := ints(*stagesFlag)
	check(err)
	kyvernoAt, err := ints(*kyvernoStages)
	check(err)
	work, err := os.MkdirTemp("", "admitc-audit-load-")
	check(err)
	defer os.RemoveAll(work)
	policies, err := policyDir(work)
	check(err)
	c, err := testcluster.Start(*bin, work)
	defer c.Stop()
	stopOnSignal(c, work)
	check(err)
	ok := run(c, runConfig{admitc: *admitc, kyverno: existing(*kyverno), kyvernoAt: kyvernoAt, policies: policies, stages: stages,
		namespaces: *namespaces, maxRSS: *maxRSS, maxGrowth: *maxGrowth, work: work, admitcEnv: splitEnv(*admitcEnv)})
	if *hold {
		fmt.Printf("holding the cluster: KUBECONFIG=%s (Ctrl-C ends it)\n", c.Kubeconfig)
		select {}
	}
	if !ok {
		c.Stop()
		os.Exit(1)
	}
}

type runConfig struct {
	admitc, kyverno, policies, work string
	admitcEnv                       []string
	kyvernoAt, stages               []int
	namespaces, maxRSS              int
	maxGrowth                       float64
}

// run fills the cluster stage by stage and measures at each; it reports
// whether admitc stayed within its memory goals.
func run(c *testcluster.Cluster, cfg runConfig) bool {
	ctx := context.Background()
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	check(err)
	rc.QPS, rc.Burst = 5000, 5000
	client, err := kubernetes.NewForConfig(rc)
	check(err)
	check(createNamespaces(ctx, client, cfg.namespaces))
	fmt.Printf("audit-load: pods in %d namespaces, %d policies (%s), %d CPUs, load average %s, admitc env %v\n",
		cfg.namespaces, countPolicies(cfg.policies), policySource, goruntime.NumCPU(), loadAverage(), cfg.admitcEnv)
	var admitcRuns []measurement
	filled := 0
	for _, n := range cfg.stages {
		start := time.Now()
		check(fillPods(ctx, client, cfg.namespaces, filled, n))
		fmt.Printf("filled %d pods in %s\n", n, time.Since(start).Round(time.Millisecond))
		filled = n
		fmt.Printf("  load average before the audit: %s\n", loadAverage())
		m := auditWithAdmitc(cfg, c.Kubeconfig, n)
		admitcRuns = append(admitcRuns, m)
		m.print()
		if contains(cfg.kyvernoAt, n) && cfg.kyverno != "" {
			k := applyWithKyverno(cfg, c.Kubeconfig, n)
			k.print()
			if k.err == nil && m.err == nil {
				fmt.Printf("  admitc/kyverno objects/s over the whole run: %.1fx\n", m.rate()/k.rate())
			}
		}
	}
	return judge(admitcRuns, cfg)
}

// judge checks admitc's memory goals.
func judge(runs []measurement, cfg runConfig) bool {
	ok := true
	for _, m := range runs {
		if m.err != nil {
			fmt.Printf("FAIL: admitc audit at %d pods: %v\n", m.objects, m.err)
			ok = false
		}
		if m.peakRSSMiB() > float64(cfg.maxRSS) {
			fmt.Printf("FAIL: admitc's peak RSS at %d pods is %.0f MiB, over %d MiB\n", m.objects, m.peakRSSMiB(), cfg.maxRSS)
			ok = false
		}
	}
	if len(runs) > 1 {
		first, last := runs[0], runs[len(runs)-1]
		growth := last.peakRSSMiB() / first.peakRSSMiB()
		fmt.Printf("admitc peak RSS %d -> %d pods: %.0f -> %.0f MiB (x%.2f, goal <= x%.1f)\n", first.objects, last.objects, first.peakRSSMiB(), last.peakRSSMiB(), growth, cfg.maxGrowth)
		if growth > cfg.maxGrowth {
			fmt.Printf("FAIL: admitc's peak RSS grew x%.2f\n", growth)
			ok = false
		}
	}
	return ok
}

func splitEnv(s string) []string {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

func existing(path string) string {
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		p, _ := filepath.Abs(path)
		return p
	}
	return ""
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit-load:", err)
		os.Exit(2)
	}
}

// stopOnSignal stops the cluster and removes the work directory on Ctrl-C
// or SIGTERM (child processes die with this one: Pdeathsig).
func stopOnSignal(c *testcluster.Cluster, work string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		c.Stop()
		os.RemoveAll(work)
		os.Exit(130)
	}()
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
