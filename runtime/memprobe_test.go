package runtime_test

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/runtime"
)

// celPolicies is one file with n `type: cel` policies, each with a variable
// and a validation; with kinds set they match Pods only (one policy each),
// otherwise the compiler adds the workload twins (three each).
func celPolicies(n int, kinds bool) []compiler.Source {
	match := ""
	if kinds {
		match = ", match: {kinds: [Pod]}"
	}
	var b strings.Builder
	b.WriteString("policies:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: p%05d, type: cel%s, variables: [{name: limit, expression: \"%d\"}], validations: [{expression: \"object.spec.containers.size() < variables.limit\", message: too many}]}\n", i, match, i%50+1)
	}
	return []compiler.Source{{Name: "cel.yaml", Data: []byte(b.String())}}
}

// TestMemoryProbe measures the compiler and engine for ADMITC_MEM_PROBE cel
// policies (skipped when unset): time, live heap after GC, and peak RSS.
// ADMITC_MEM_PROBE_DEFAULT=1 omits match.kinds so each policy is split in three.
func TestMemoryProbe(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ADMITC_MEM_PROBE"))
	if n == 0 {
		t.Skip("set ADMITC_MEM_PROBE=N to measure N cel policies")
	}
	src := celPolicies(n, os.Getenv("ADMITC_MEM_PROBE_DEFAULT") == "")
	base := liveHeap()
	start := time.Now()
	set, diags := compiler.Compile(src, compiler.Options{})
	require.Empty(t, diags)
	compiled := time.Since(start)
	start = time.Now()
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	engine := time.Since(start)
	heap := liveHeap() - base
	t.Logf("sources=%d policies=%d compile=%v engine=%v heap=%.1fMiB heap/policy=%.1fKiB rss=%s hwm=%s",
		n, len(set.Policies), compiled.Round(time.Millisecond), engine.Round(time.Millisecond),
		float64(heap)/(1<<20), float64(heap)/float64(len(set.Policies))/1024, procStatus("VmRSS"), procStatus("VmHWM"))
	goruntime.KeepAlive(e)
}

func liveHeap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

func procStatus(key string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key+":") {
			return strings.Join(strings.Fields(strings.TrimPrefix(line, key+":")), "")
		}
	}
	return "?"
}
