package compiler

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzCompile feeds arbitrary bytes to the policy compiler: it must return a
// set or diagnostics, never panic, and every diagnostic must render.
func FuzzCompile(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/policies/*")
	bad, _ := filepath.Glob("../internal/cli/testdata/bad/*")
	for _, p := range append(seeds, bad...) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("policies: [{name: x, type: cel, validations: [{expression: '1 +'}]}]"))
	f.Add([]byte("{\"policies\": [{\"name\": \"a\", \"type\": \"cel\", \"validations\": [{\"expression\": \"|\\n  x\"}]}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, diags := Compile([]Source{{Name: "fuzz.yaml", Data: data}}, Options{})
		if set == nil && len(diags) == 0 {
			t.Fatal("no policy set and no diagnostics")
		}
		_ = diags.Error()
	})
}
