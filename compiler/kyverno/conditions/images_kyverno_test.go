//go:build kyverno

package conditions

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/kyverno/kyverno/pkg/config"
	apiutils "github.com/kyverno/kyverno/pkg/utils/api"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
)

// imageRefs are image references at the edges of distribution's grammar
// and of Kyverno's default registry.
var imageRefs = []string{
	"nginx", "nginx:1.25", "nginx:latest", "library/nginx", "docker.io/nginx", "docker.io/library/nginx:1.0",
	"ghcr.io/org/app:v1.2.3", "ghcr.io/org/team/app", "localhost/app", "localhost:5000/app:dev", "Localhost/app",
	"Foo/bar", "foo/Bar", "FOO", "a_b.c/d", "a_b/c", "my_registry.io/a/b", "registry.io/a_b/c", "reg.io/a__b/c-d",
	"quay.io:443/x/y:1", "[::1]:5000/foo:bar", "[fe80::1]/img", "x:", "x:-bad", "x::y", "a//b", "/a", "a/", ":tag",
	"nginx@sha256:" + strings.Repeat("a", 64), "nginx:1.0@sha256:" + strings.Repeat("0", 64), "nginx@sha256:abc",
	"nginx@sha512:" + strings.Repeat("f", 128), "nginx@sha384:" + strings.Repeat("1", 96), "nginx@md5:" + strings.Repeat("1", 32),
	"nginx@sha256:" + strings.Repeat("A", 64), "nginx@blake3:" + strings.Repeat("a", 64), "reg.io/" + strings.Repeat("a", 250),
	"reg.io/" + strings.Repeat("a", 240) + ":t", "example.com:80/ns/img:" + strings.Repeat("t", 128), "img:" + strings.Repeat("t", 129),
	"", "   ", " nginx", "nginx ", "ngi nx", "ÄB/c", "a.b/c", "a:b/c", "my-reg.example.com/team/app:2024.01.01-rc1",
}

// TestImagesAsKyverno compares ImagesExpression with Kyverno's own
// ExtractImagesFromResource (default configuration) on seeded objects:
// every kind Kyverno extracts from and others, container lists of every
// shape, and the references above.
func TestImagesAsKyverno(t *testing.T) {
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	res := cc.CompileCELExpression(boolExpr(ImagesExpression()), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	require.Nil(t, res.Error)
	cfg := config.NewDefaultConfiguration(false)
	rng := rand.New(rand.NewSource(7))
	ref := func() any {
		switch n := rng.Intn(40); {
		case n == 0:
			return nil
		case n == 1:
			return 3
		case n < 30:
			return imageRefs[rng.Intn(12)]
		}
		return imageRefs[rng.Intn(len(imageRefs))]
	}
	container := func(i int) any {
		c := map[string]any{"name": fmt.Sprintf("c%d", i%3), "image": ref()}
		switch rng.Intn(40) {
		case 0:
			delete(c, "name")
		case 1:
			c["name"] = 5
		case 2:
			delete(c, "image")
		}
		return c
	}
	list := func() any {
		switch rng.Intn(30) {
		case 0:
			return nil
		case 1:
			return "x"
		case 2:
			return map[string]any{"a": container(0), "b": container(1)}
		case 3:
			return []any{[]any{container(0), 4}, container(1)}
		case 4:
			return map[string]any{"a": []any{container(0)}}
		}
		var l []any
		for i := rng.Intn(4); i > 0; i-- {
			if rng.Intn(30) == 0 {
				l = append(l, "not a container")
				continue
			}
			l = append(l, container(i))
		}
		return l
	}
	podSpec := func() any {
		if rng.Intn(60) == 0 {
			return "spec"
		}
		s := map[string]any{}
		for _, tag := range []string{"initContainers", "containers", "ephemeralContainers"} {
			if rng.Intn(3) > 0 {
				s[tag] = list()
			}
		}
		return s
	}
	kinds := []string{"Pod", "Deployment", "StatefulSet", "Job", "CronJob", "ReplicationController", "Service", ""}
	compared, withImages, failed := 0, 0, 0
	for n := 0; n < 4000; n++ {
		kind := kinds[rng.Intn(len(kinds))]
		obj := map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "o"}}
		if kind != "" {
			obj["kind"] = kind
		}
		switch kind {
		case "Pod", "Service", "":
			obj["spec"] = podSpec()
		case "CronJob":
			obj["spec"] = map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": podSpec()}}}}
		default:
			obj["spec"] = map[string]any{"template": map[string]any{"spec": podSpec()}}
		}
		data, err := json.Marshal(obj)
		require.NoError(t, err)
		var kyvernoObj, celObj map[string]any
		require.NoError(t, json.Unmarshal(data, &kyvernoObj))
		require.NoError(t, json.Unmarshal(data, &celObj))

		want, wantErr := kyvernoImages(kyvernoObj, cfg)
		out, _, err := res.Program.Eval(map[string]any{"object": intsAsInt64(celObj), "oldObject": nil, "request": map[string]any{"operation": "CREATE"}})
		require.NoError(t, err, "%s", data)
		got := out.Value()
		compared++
		if wantErr != nil {
			failed++
			require.Equal(t, []byte("kyverno: invalid image"), got, "Kyverno fails (%v) on %s", wantErr, data)
			continue
		}
		if len(want) == 0 {
			require.Equal(t, types.NullValue, out, "Kyverno has no images for %s", data)
			continue
		}
		withImages++
		pb, err := out.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
		require.NoError(t, err)
		gotJSON, err := protojson.Marshal(pb.(*structpb.Value))
		require.NoError(t, err)
		wantJSON, err := json.Marshal(want)
		require.NoError(t, err)
		require.JSONEq(t, string(wantJSON), string(gotJSON), "images of %s", data)
	}
	t.Logf("%d objects compared: %d with images, %d where Kyverno's extraction fails", compared, withImages, failed)
	require.Greater(t, withImages, 1000)
	require.Greater(t, failed, 300)
}

// kyvernoImages is Kyverno's images variable for obj, as its context
// loader builds it (ExtractImagesFromResource, then each info as JSON with
// its jsonPointer).
func kyvernoImages(obj map[string]any, cfg config.Configuration) (map[string]any, error) {
	infos, err := apiutils.ExtractImagesFromResource(unstructured.Unstructured{Object: obj}, nil, cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for tag, byName := range infos {
		m := map[string]any{}
		for name, info := range byName {
			data, err := json.Marshal(info.ImageInfo)
			if err != nil {
				return nil, err
			}
			var v map[string]any
			if err := json.Unmarshal(data, &v); err != nil {
				return nil, err
			}
			v["jsonPointer"] = info.Pointer
			m[name] = v
		}
		out[tag] = m
	}
	return out, nil
}
