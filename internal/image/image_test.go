package image

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/internal/version"
)

// TestImage builds admitc as `make image` does (static, version stamped),
// puts it in an image, reads the image back from both the tarball and the
// OCI layout, checks its config, and runs the binary extracted from its
// layer.
func TestImage(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("the image holds a linux binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "admitc")
	const stamped = "v9.8.7-test"
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/admitc/admitc/internal/version.Version="+stamped, "-o", bin, "../../cmd/admitc")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	img, err := Build(Options{Binary: bin, Version: stamped, OS: "linux", Arch: goruntime.GOARCH, Source: "https://github.com/admitc/admitc"})
	require.NoError(t, err)
	ref := version.Repository + ":" + stamped
	tarPath := filepath.Join(dir, "image.tar")
	require.NoError(t, WriteTarball(tarPath, img, ref))
	require.NoError(t, WriteLayout(filepath.Join(dir, "layout"), img, ref))

	tag, err := name.NewTag(ref)
	require.NoError(t, err)
	fromTar, err := tarball.ImageFromPath(tarPath, &tag)
	require.NoError(t, err)
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "layout"))
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1)
	assert.Equal(t, ref, m.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	fromLayout, err := idx.Image(m.Manifests[0].Digest)
	require.NoError(t, err)
	want, err := img.Digest()
	require.NoError(t, err)
	got, err := fromLayout.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, got, "the OCI layout holds the built image")

	cf, err := fromTar.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/admitc"}, cf.Config.Entrypoint)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, goruntime.GOARCH, cf.Architecture)
	assert.Equal(t, stamped, cf.Config.Labels["org.opencontainers.image.version"])
	assert.Equal(t, "admitc", cf.Config.Labels["org.opencontainers.image.title"])

	// The filesystem: the binary, the non-root user's passwd entry, no shell.
	files := map[string]*tar.Header{}
	rc := mutate.Extract(fromTar)
	defer rc.Close()
	tr := tar.NewReader(rc)
	extracted := filepath.Join(dir, "extracted-admitc")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		files[h.Name] = h
		if h.Name == "admitc" {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
	}
	require.Contains(t, files, "admitc")
	assert.Equal(t, int64(0o755), files["admitc"].Mode&0o777)
	assert.Contains(t, files, "etc/passwd")
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		assert.NotContains(t, files, shell)
	}

	run := exec.Command(extracted, "version", "-o", "json")
	out, err = run.Output()
	require.NoError(t, err)
	var info version.Info
	require.NoError(t, json.Unmarshal(out, &info))
	assert.Equal(t, stamped, info.Version)
	assert.Equal(t, ref, info.Image, "the webhook backend's default image follows the stamped version")
}

// Identical inputs give identical images: the build is reproducible.
func TestImageIsReproducible(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "admitc")
	require.NoError(t, os.WriteFile(bin, []byte("#!not really a binary\n"), 0o755))
	a, err := Build(Options{Binary: bin, Version: "v1", OS: "linux", Arch: "amd64"})
	require.NoError(t, err)
	b, err := Build(Options{Binary: bin, Version: "v1", OS: "linux", Arch: "amd64"})
	require.NoError(t, err)
	da, _ := a.Digest()
	db, _ := b.Digest()
	assert.Equal(t, da, db)
}

func TestMissingBinary(t *testing.T) {
	_, err := Build(Options{Binary: filepath.Join(t.TempDir(), "nope")})
	require.ErrorContains(t, err, "read the admitc binary")
}
