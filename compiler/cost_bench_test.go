package compiler_test

import (
	"fmt"
	"testing"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/adversarial"
)

// BenchmarkCompileAdversarial measures compiling the adversarial policies
// whose size grows with one parameter (nested foreach, nested anchors,
// flat foreach entries): time and allocation per compile should grow
// linearly with the parameter. Run one case in its own process to read its
// peak RSS too:
//
//	go test -c -o /tmp/compiler.test ./compiler
//	/usr/bin/time -v /tmp/compiler.test -test.run '^$' -test.bench 'CompileAdversarial/nested-foreach-20$' -test.benchtime 1x -test.benchmem
func BenchmarkCompileAdversarial(b *testing.B) {
	cases := []struct {
		name string
		gen  func(int) []byte
		ns   []int
	}{
		{"nested-foreach", adversarial.NestedForEach, []int{1, 2, 3, 5, 10, 20}},
		{"nested-anchors", adversarial.NestedAnchors, []int{100, 1200}},
		{"flat-foreach", adversarial.FlatForEach, []int{100, 1000}},
	}
	for _, c := range cases {
		for _, n := range c.ns {
			src := []compiler.Source{{Name: "p.yaml", Data: c.gen(n)}}
			b.Run(fmt.Sprintf("%s-%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.ReportMetric(float64(len(src[0].Data)), "input-bytes")
				for b.Loop() {
					compiler.Compile(src, compiler.Options{})
				}
			})
		}
	}
}
