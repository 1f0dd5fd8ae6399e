package celenv

import (
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// programKey names one compilation: the same expression text compiled in
// the same environment (which fixes the libraries, the cost options and the
// type of "variables"), in the same mode, for the same return types, always
// gives the same program, output type or error.
type programKey struct {
	env         *environment.EnvSet
	mode        environment.Type
	returnTypes string
	expression  string
}

// maxCachedPrograms bounds the cache: past it the cache starts afresh, so a
// server that reloads policies for months holds at most this many programs
// besides the ones its policies use.
const maxCachedPrograms = 20000

// programCache remembers compilation results. A cel.Program is safe for
// concurrent use and keeps no state between evaluations (cost trackers and
// activations are per evaluation), so policies share it.
type programCache struct {
	mu sync.RWMutex
	m  map[programKey]plugincel.CompilationResult
}

var programs = &programCache{m: map[programKey]plugincel.CompilationResult{}}

func (c *programCache) get(k programKey) (plugincel.CompilationResult, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	res, ok := c.m[k]
	return res, ok
}

func (c *programCache) put(k programKey, res plugincel.CompilationResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedPrograms {
		c.m = map[programKey]plugincel.CompilationResult{}
	}
	c.m[k] = res
}

func returnTypesKey(ts []*cel.Type) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, "|")
}

// ForgetPrograms empties the cache of compiled programs, so a benchmark
// measures a cold compilation, as one run of admitc compile is.
func ForgetPrograms() {
	programs.mu.Lock()
	defer programs.mu.Unlock()
	programs.m = map[programKey]plugincel.CompilationResult{}
}
