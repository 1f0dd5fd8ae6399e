package kyverno

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler/crd"
)

var updateCRDs = flag.Bool("update-crds", false, "rewrite crds/crds.json.gz from Kyverno's module")

// TestEmbeddedCRDsAreKyvernos: the CRDs admitc validates Kyverno policies
// against are those of the Kyverno module go.mod names, descriptions left
// out, and every version of them builds.
func TestEmbeddedCRDsAreKyvernos(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kyverno/kyverno")
	dir, err := cmd.Output()
	require.NoError(t, err)
	var want []apiextensionsv1.CustomResourceDefinition
	for _, f := range CRDFiles {
		data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "config", "crds", f))
		require.NoError(t, err)
		var c apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.UnmarshalStrict(data, &c), f)
		crd.StripDescriptions(&c)
		want = append(want, c)
	}
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	if *updateCRDs {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = zw.Write(wantJSON)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		require.NoError(t, os.WriteFile("crds/crds.json.gz", buf.Bytes(), 0o644))
		crdData = buf.Bytes()
	}
	got, err := EmbeddedCRDs()
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), string(gotJSON), "crds/crds.json.gz is not Kyverno's; rewrite it with -update-crds")
	versions := 0
	for _, c := range got {
		for _, v := range c.Spec.Versions {
			s, err := crdSchema(schema.GroupVersionKind{Group: c.Spec.Group, Version: v.Name, Kind: c.Spec.Names.Kind})
			require.NoError(t, err)
			assert.NotNil(t, s, "%s %s", c.Spec.Names.Kind, v.Name)
			versions++
		}
	}
	assert.Equal(t, 2+2+3+2+3, versions)
	s, err := crdSchema(schema.GroupVersionKind{Group: "kyverno.io", Version: "v9", Kind: "ClusterPolicy"})
	require.NoError(t, err)
	assert.Nil(t, s, "a version no CRD defines has no schema")
}
