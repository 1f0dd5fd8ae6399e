// Package image builds admitc's container image without a Docker daemon,
// the way ko does: one layer holding the static admitc binary (plus the
// files a non-root, shell-less image needs) on an empty base, written as
// an OCI image layout and as a tarball that `docker load` and `crane push`
// take.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the image runs as (distroless's nonroot).
const NonRoot = 65532

// BinaryPath is where the binary sits in the image, and its entrypoint.
const BinaryPath = "/admitc"

// Options describe the image.
type Options struct {
	// Binary is the path of a static linux admitc binary.
	Binary string
	// Version is the admitc version the binary was stamped with.
	Version string
	// Platform is the binary's, e.g. linux/amd64.
	OS, Arch string
	// Source is the org.opencontainers.image.source label.
	Source string
	// Created is the image's creation time; the zero time (the default)
	// keeps builds reproducible.
	Created time.Time
}

// Build returns the image for opts.
func Build(opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, fmt.Errorf("read the admitc binary: %w", err)
	}
	layerTar, err := rootFS(bin, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("build the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{CreatedBy: "admitc make image", Created: v1.Time{Time: opts.Created}},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = opts.OS, opts.Arch
	cf.Created = v1.Time{Time: opts.Created}
	user := fmt.Sprintf("%d:%d", NonRoot, NonRoot)
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		User:       user,
		WorkingDir: "/",
		Env:        []string{"PATH=/", "SSL_CERT_DIR=/etc/ssl/certs"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "admitc",
			"org.opencontainers.image.description": "Kubernetes admission policies: compiler, offline tester and HTTPS admission webhook",
			"org.opencontainers.image.version":     opts.Version,
			"org.opencontainers.image.source":      opts.Source,
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cf)
}

// rootFS is the layer: the binary, and /etc/passwd and /etc/group naming
// the non-root user, /tmp, no shell.
func rootFS(bin []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: created, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRoot)
	steps := []error{
		dir("etc/", 0o755),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
		dir("tmp/", 0o1777),
		file(BinaryPath[1:], 0o755, bin),
	}
	for _, err := range steps {
		if err != nil {
			return nil, fmt.Errorf("build the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayout writes img as an OCI image layout in dir (replacing it),
// annotated with ref as its name.
func WriteLayout(dir string, img v1.Image, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write the OCI layout: %w", err)
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
}

// WriteTarball writes img as a tarball `docker load` takes, tagged ref;
// the file appears whole or not at all.
func WriteTarball(path string, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the image tarball: %w", err)
	}
	return os.Rename(tmp, path)
}
