//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notifyWriter records what is written and signals each write.
type notifyWriter struct {
	mu     sync.Mutex
	b      strings.Builder
	writes chan string
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	w.writes <- string(p)
	return len(p), nil
}

// TestTestStreamsTextOutput feeds `admitc test` a manifest through a FIFO
// and writes the second document only after the first object's result has
// been printed: the command would hang (and the test time out) if it read
// every manifest before printing.
func TestTestStreamsTextOutput(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pods.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	pod := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}\n"
	}
	out := &notifyWriter{writes: make(chan string, 16)}
	done := make(chan int, 1)
	go func() {
		done <- Execute(Streams{In: strings.NewReader(""), Out: out, Err: &strings.Builder{}}, []string{"test", fifo})
	}()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	// The decoder sniffs the first 4 KiB to tell JSON from YAML.
	_, err = f.WriteString("# " + strings.Repeat("x", 4096) + "\n" + pod("first") + "---\n")
	require.NoError(t, err)
	select {
	case first := <-out.writes:
		assert.Contains(t, first, "Pod default/first")
	case <-time.After(20 * time.Second):
		t.Fatal("no result printed before the second document was written")
	}
	_, err = f.WriteString(pod("second"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	<-done
	out.mu.Lock()
	defer out.mu.Unlock()
	assert.Regexp(t, `(?s)Pod default/first.*Pod default/second.*2 object\(s\)`, out.b.String())
}
