package golden

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/cli"
	"github.com/admitc/admitc/runtime"
)

// The round trip: an admitc policy compiled to VAP/MAP YAML and read back
// by compiler/vap must decide every fixture exactly as the original does
// (verdict, denials, warnings, patches), in the namespace the case is
// compiled for. Every golden case with vap.yaml or map.yaml takes part.
func TestRoundTripThroughAdmissionPolicies(t *testing.T) {
	dirs, err := filepath.Glob("golden/*")
	require.NoError(t, err)
	ms, err := runtime.ReadManifests(manifests)
	require.NoError(t, err)
	cases := 0
	for _, dir := range dirs {
		emitted := existing(dir, "vap.yaml", "map.yaml")
		if len(emitted) == 0 || hasFlag(t, dir, "compile.flags", "--kube-version") {
			continue
		}
		cases++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			original := engine(t, inputPath(t, dir))
			imported := engine(t, emitted...)
			params := caseParams(t, dir)
			for _, m := range ms {
				req := func() *runtime.Request {
					r := runtime.RequestFor(m.Object, nil, namespace(t, dir))
					r.Params = params
					return r
				}
				want, err := original.Admit(context.Background(), req())
				require.NoError(t, err)
				got, err := imported.Admit(context.Background(), req())
				require.NoError(t, err)
				assert.Equal(t, want.Allowed(), got.Allowed(), m.Source)
				assert.Equal(t, want.Denials(), got.Denials(), m.Source)
				assert.Equal(t, want.Warnings(), got.Warnings(), m.Source)
				assert.Equal(t, want.Patch, got.Patch, m.Source)
			}
		})
	}
	require.Greater(t, cases, 10)
}

func existing(dir string, names ...string) []string {
	var out []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

func engine(t *testing.T, paths ...string) *runtime.Engine {
	t.Helper()
	srcs, err := compiler.ReadSources(paths)
	require.NoError(t, err)
	set, diags := compiler.Compile(srcs, compiler.Options{})
	require.Empty(t, diags.Error())
	e, err := runtime.NewEngine(set)
	require.NoError(t, err)
	return e
}

func hasFlag(t *testing.T, dir, file, flag string) bool {
	for _, f := range flags(t, dir, file) {
		if f == flag {
			return true
		}
	}
	return false
}

// namespace is the case's --namespace (the bindings' scope), else default.
func namespace(t *testing.T, dir string) string {
	fs := flags(t, dir, "compile.flags")
	for i, f := range fs {
		if f == "--namespace" && i+1 < len(fs) {
			return fs[i+1]
		}
	}
	return "default"
}

func caseParams(t *testing.T, dir string) []*unstructured.Unstructured {
	fs := flags(t, dir, "test.flags")
	var out []*unstructured.Unstructured
	for i, f := range fs {
		if f == "--params" && i+1 < len(fs) {
			ms, err := runtime.ReadManifests([]string{fs[i+1]})
			require.NoError(t, err)
			for _, m := range ms {
				out = append(out, m.Object)
			}
		}
	}
	return out
}

// The round trip is also a fixed point: the VAP/MAP YAML of every golden
// case, read back by compiler/vap and emitted again, gives the same bytes,
// and the IR read from the emitted YAML equals the IR read from the golden
// files, origins (file, line, column) aside.
func TestRoundTripIsAFixedPoint(t *testing.T) {
	dirs, err := filepath.Glob("golden/*")
	require.NoError(t, err)
	cases := 0
	for _, dir := range dirs {
		emitted := existing(dir, "vap.yaml", "map.yaml")
		if len(emitted) == 0 || hasFlag(t, dir, "compile.flags", "--kube-version") {
			continue
		}
		cases++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			first := t.TempDir()
			irFirst := compileImported(t, emitted, first)
			for _, name := range []string{"vap.yaml", "map.yaml"} {
				want, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					continue
				}
				got, err := os.ReadFile(filepath.Join(first, name))
				require.NoError(t, err, "the re-emission lost %s", name)
				assert.Equal(t, string(want), string(got), "%s emitted again from its own import", name)
			}
			second := t.TempDir()
			irSecond := compileImported(t, existing(first, "vap.yaml", "map.yaml"), second)
			assert.Equal(t, irFirst, irSecond, "the IR of the re-imported policies")
		})
	}
	require.Greater(t, cases, 10)
}

// compileImported compiles admission policy files with the vap and map
// backends into out and returns the IR with every origin removed.
func compileImported(t *testing.T, files []string, out string) any {
	t.Helper()
	args := []string{"compile", "--backend", "vap,map", "--ir", "--out", out}
	for _, f := range files {
		args = append(args, "--policies", f)
	}
	_, stderr, code := run(args...)
	require.Equal(t, cli.ExitOK, code, stderr)
	data, err := os.ReadFile(filepath.Join(out, "ir.json"))
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(data, &doc))
	return withoutOrigins(doc)
}

func withoutOrigins(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "origin" || strings.HasSuffix(k, "Origin") {
				delete(v, k)
				continue
			}
			v[k] = withoutOrigins(e)
		}
	case []any:
		for i, e := range v {
			v[i] = withoutOrigins(e)
		}
	}
	return v
}
