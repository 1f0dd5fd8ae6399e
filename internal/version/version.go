// Package version is admitc's version, stamped at build time, and the image
// that version ships as.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is admitc's release. `make build` and `make image` stamp it with
//
//	-ldflags "-X github.com/admitc/admitc/internal/version.Version=v1.2.3"
//
// A plain `go build` reports the release this source tree is.
var Version = "v0.1.0"

// Repository is where admitc's image is published.
const Repository = "ghcr.io/admitc/admitc"

// Image is the image reference of this build: the webhook backend's default.
func Image() string { return Repository + ":" + Version }

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Image     string `json:"image"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Revision and Modified come from the VCS stamp of the build, if any.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// Get returns the running binary's Info.
func Get() Info {
	info := Info{Version: Version, Image: Image(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}
