// Command admitc-image builds admitc's OCI image from a static admitc
// binary, without a Docker daemon: `make image` runs it. It writes an OCI
// image layout (for `crane push --image-refs` or any OCI tool) and a
// tarball that `docker load` takes.
package main

import (
	"flag"
	"fmt"
	"os"
	goruntime "runtime"

	"github.com/admitc/admitc/internal/image"
	"github.com/admitc/admitc/internal/version"
)

func main() {
	var o image.Options
	var layoutDir, tarPath, ref string
	flag.StringVar(&o.Binary, "binary", "", "static linux admitc binary (required)")
	flag.StringVar(&o.Version, "version", version.Version, "the version the binary was stamped with")
	flag.StringVar(&o.OS, "os", "linux", "the binary's operating system")
	flag.StringVar(&o.Arch, "arch", goruntime.GOARCH, "the binary's architecture")
	flag.StringVar(&o.Source, "source", "https://github.com/admitc/admitc", "the org.opencontainers.image.source label")
	flag.StringVar(&layoutDir, "oci-layout", "", "write an OCI image layout to this directory (replaced)")
	flag.StringVar(&tarPath, "tarball", "", "write a docker-loadable tarball to this file")
	flag.StringVar(&ref, "tag", "", "image reference (default "+version.Repository+":VERSION)")
	flag.Parse()
	if o.Binary == "" || (layoutDir == "" && tarPath == "") {
		fmt.Fprintln(os.Stderr, "usage: admitc-image --binary FILE [--version V] [--oci-layout DIR] [--tarball FILE]")
		os.Exit(2)
	}
	if ref == "" {
		ref = version.Repository + ":" + o.Version
	}
	img, err := image.Build(o)
	if err == nil && layoutDir != "" {
		err = image.WriteLayout(layoutDir, img, ref)
	}
	if err == nil && tarPath != "" {
		err = image.WriteTarball(tarPath, img, ref)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: "+err.Error())
		os.Exit(1)
	}
	digest, _ := img.Digest()
	fmt.Printf("%s@%s\n", ref, digest)
}
