package server_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/runtime/server"
)

// watched starts Watch on spec and returns the number of onChange calls.
func watched(t *testing.T, spec server.WatchSpec) *atomic.Int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var calls atomic.Int64
	require.NoError(t, server.Watch(ctx, spec, slog.New(slog.DiscardHandler), func() { calls.Add(1) }))
	return &calls
}

// writeFor appends to file every 10ms for d, as a busy log does.
func writeFor(t *testing.T, file string, d time.Duration) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer f.Close()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		_, err := f.WriteString(`{"msg":"review"}` + "\n")
		require.NoError(t, err)
	}
}

// settle waits past the debounce and returns the count then.
func settle(calls *atomic.Int64) int64 {
	time.Sleep(600 * time.Millisecond)
	return calls.Load()
}

func TestWatchIgnoresOtherFilesNextToTheWatchedOne(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policies.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"policies":[]}`), 0o644))
	calls := watched(t, server.WatchSpec{Paths: []string{policy}})

	writeFor(t, filepath.Join(dir, "serve.log"), time.Second)
	assert.Equal(t, int64(0), settle(calls), "a log file written next to the policies must not reload them")

	require.NoError(t, os.WriteFile(policy, []byte(`{"policies": []}`), 0o644))
	assert.Equal(t, int64(1), settle(calls), "a change of the watched file reloads once")
}

func TestWatchDirectoryCountsOnlyItsPolicyFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("policies: []\n"), 0o644))
	isPolicy := func(name string) bool { return strings.HasSuffix(name, ".yaml") }
	calls := watched(t, server.WatchSpec{Paths: []string{dir}, DirEntry: isPolicy})

	writeFor(t, filepath.Join(dir, "serve.log"), time.Second)
	assert.Equal(t, int64(0), settle(calls))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("policies: []\n"), 0o644))
	assert.Equal(t, int64(1), settle(calls), "a new policy file in the directory reloads once")
}

// configMapVolume lays dir out as the kubelet's atomic writer does and
// returns a function that publishes a new version of file.
func configMapVolume(t *testing.T, dir, file string) func(data string) {
	t.Helper()
	version := 0
	publish := func(data string) {
		version++
		ts := filepath.Join(dir, "..2026_12_02_10_00_0"+string(rune('0'+version)))
		require.NoError(t, os.Mkdir(ts, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ts, file), []byte(data), 0o644))
		old, _ := os.Readlink(filepath.Join(dir, "..data"))
		require.NoError(t, os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")))
		require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
		if old != "" {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, old)))
		}
	}
	publish("v1")
	require.NoError(t, os.Symlink(filepath.Join("..data", file), filepath.Join(dir, file)))
	return publish
}

func TestWatchSeesAConfigMapSymlinkSwap(t *testing.T) {
	for name, watchDir := range map[string]bool{"file": false, "directory": true} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			publish := configMapVolume(t, dir, "policies.json")
			spec := server.WatchSpec{Paths: []string{filepath.Join(dir, "policies.json")}}
			if watchDir {
				spec = server.WatchSpec{Paths: []string{dir}, DirEntry: func(n string) bool { return strings.HasSuffix(n, ".json") }}
			}
			calls := watched(t, spec)
			publish("v2")
			assert.Equal(t, int64(1), settle(calls), "the ..data swap reloads once")
		})
	}
}

func TestWatchSeesTheResolvedTargetChange(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"v1", "v2"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, v), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, v, "tls.crt"), []byte(v), 0o644))
	}
	require.NoError(t, os.Symlink("v1", filepath.Join(dir, "current")))
	require.NoError(t, os.Symlink(filepath.Join("current", "tls.crt"), filepath.Join(dir, "tls.crt")))
	calls := watched(t, server.WatchSpec{Paths: []string{filepath.Join(dir, "tls.crt")}})

	require.NoError(t, os.Symlink("v2", filepath.Join(dir, "current.tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "current.tmp"), filepath.Join(dir, "current")))
	assert.Equal(t, int64(1), settle(calls), "tls.crt now resolves to v2/tls.crt")
}
