package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeManifests feeds arbitrary bytes to the manifest decoder: it
// must return objects or an error, never panic, and every object it returns
// has apiVersion, kind and a name.
func FuzzDecodeManifests(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*/*")
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("---\n---\nkind: List\napiVersion: v1\nitems: [1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := DecodeManifests("fuzz", data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.Object.GetAPIVersion() == "" || m.Object.GetKind() == "" || (m.Object.GetName() == "" && m.Object.GetGenerateName() == "") {
				t.Fatalf("decoder returned an incomplete object: %v", m.Object.Object)
			}
		}
	})
}
