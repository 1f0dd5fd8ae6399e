//go:build kyverno

package compare

import (
	"os"
	"testing"
)

// The Kyverno engine runs the set's own policies as the kyverno backend
// generates them and its Kyverno ClusterPolicies as written.
func init() {
	benchEngines = append(benchEngines, benchEngine{"kyverno-engine", func(b *testing.B, s benchSet) Engine {
		stream := generated(b, sources(b, s.own), "kyverno")
		for _, f := range s.kyverno {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			stream = append(append(stream, "\n---\n"...), data...)
		}
		k, err := NewKyverno(stream)
		if err != nil {
			b.Fatal(err)
		}
		return k
	}})
}
