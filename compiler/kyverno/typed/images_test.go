package typed

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
)

// imageReferences are references at the edges of distribution's grammar
// and of Kyverno's default registry: each registry, path, tag and digest
// below, combined.
func imageReferences() []string {
	registries := []string{"", "docker.io/", "ghcr.io/", "localhost/", "localhost:5000/", "Localhost/", "Foo/", "a_b.c/", "a_b/", "[::1]:5000/", "[fe80::1]/", "quay.io:443/", "reg.io/", "my-reg.example.com/", "a..b/", "-a/"}
	paths := []string{"nginx", "library/nginx", "org/team/app", "A", "x-y", "a__b/c-d", "a_b", strings.Repeat("a", 250), strings.Repeat("b", 300), "a//b", "ngi nx", ""}
	tags := []string{"", ":latest", ":1.0", ":v1.2.3-rc1", ":", ":-x", ":" + strings.Repeat("t", 128), ":" + strings.Repeat("t", 129)}
	digests := []string{"", "@sha256:" + strings.Repeat("a", 64), "@sha256:abc", "@sha512:" + strings.Repeat("f", 128), "@sha384:" + strings.Repeat("1", 96), "@md5:" + strings.Repeat("1", 32), "@sha256:" + strings.Repeat("A", 64)}
	var out []string
	for _, r := range registries {
		for _, p := range paths {
			for i, tg := range tags {
				for j, d := range digests {
					// Every tag with the first two digests, every digest
					// with the first two tags.
					if i > 1 && j > 1 {
						continue
					}
					out = append(out, r+p+tg+d)
				}
			}
		}
	}
	return append(out, " nginx", "nginx ", "   ", "x::y", "/a", "a/", ":tag", "ÄB/c", "nginx:1.0@sha256:"+strings.Repeat("0", 64))
}

// TestImagePartsAsExact checks the typed reading of one image reference
// (imageParses, imageParts) against the exact images variable
// (conditions.ImagesExpression, itself checked against Kyverno's
// GetImageInfo) on a Pod with one container of that image.
func TestImagePartsAsExact(t *testing.T) {
	base, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
	require.NoError(t, err)
	env, err := base.Extend(cel.Variable("object", cel.DynType), cel.Variable("x", cel.DynType))
	require.NoError(t, err)
	program := func(text string) cel.Program {
		a, iss := env.Compile(text)
		require.NoError(t, iss.Err(), text)
		prg, err := env.Program(a)
		require.NoError(t, err)
		return prg
	}
	exact := program(conditions.ImagesExpression())
	parses := program(imageParses())
	parts := map[string]cel.Program{}
	for name, p := range imageParts {
		parts[name] = program(p.cel)
	}
	valid, invalid := 0, 0
	for _, ref := range imageReferences() {
		obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": ref}}}}
		out, _, err := exact.Eval(map[string]any{"object": obj, "x": nil})
		require.NoError(t, err, ref)
		if strings.TrimSpace(ref) == "" {
			assert.Equal(t, types.NullType, out.Type(), "%q: a blank image gives no images", ref)
			continue
		}
		got, _, err := parses.Eval(map[string]any{"object": nil, "x": ref})
		require.NoError(t, err, ref)
		var info map[string]any
		ok := out.Type() == types.MapType
		if ok {
			native, err := out.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
			require.NoError(t, err)
			data, err := protojson.Marshal(native.(*structpb.Value))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &info))
		}
		if !assert.Equal(t, ok, got.Value(), "%q: parses", ref) || !ok {
			invalid++
			continue
		}
		valid++
		c := info["containers"].(map[string]any)["c"].(map[string]any)
		for name, prg := range parts {
			v, _, err := prg.Eval(map[string]any{"object": nil, "x": ref})
			require.NoError(t, err, "%q: %s", ref, name)
			want, present := c[name]
			if !present {
				assert.True(t, imageParts[name].omitEmpty, "%q: %s missing, which Kyverno does not omit", ref, name)
				assert.Equal(t, "", v.Value(), "%q: %s", ref, name)
				continue
			}
			assert.Equal(t, want, v.Value(), "%q: %s", ref, name)
		}
	}
	t.Logf("%d references that parse, %d that do not", valid, invalid)
	assert.Greater(t, valid, 300)
	assert.Greater(t, invalid, 300)
}
