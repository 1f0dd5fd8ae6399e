//go:build kyverno

package compare

import (
	"testing"

	"github.com/admitc/admitc/compiler"
)

func init() {
	benchEngines = append(benchEngines, func(b *testing.B, src []compiler.Source) Engine {
		k, err := NewKyverno(generated(b, src, "kyverno"))
		if err != nil {
			b.Fatal(err)
		}
		return k
	})
}
