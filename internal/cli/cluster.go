//go:build !serveonly

package cli

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/internal/defaults"
	"github.com/admitc/admitc/runtime"
)

// clusterFlags are the flags of the offline commands (test, cel, compare)
// that stand in for what a cluster does to a request before admission: the
// API server's defaulting of the object, and the labels of its namespace.
type clusterFlags struct {
	NoDefaults      bool
	NamespaceLabels string

	labels map[string]map[string]string
}

func (f *clusterFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&f.NoDefaults, "no-defaults", false, "judge objects as written, without the API server's defaults for built-in kinds (Service type, imagePullPolicy, ...)")
	fs.StringVar(&f.NamespaceLabels, "namespace-labels", "", "YAML/JSON file mapping namespace names to their labels, for namespaceObject and namespace selectors")
}

// complete reads the --namespace-labels file (the format serve reads, see
// readNamespaceLabels).
func (f *clusterFlags) complete() error {
	if f.NamespaceLabels == "" {
		return nil
	}
	labels, err := readNamespaceLabels(f.NamespaceLabels)
	if err != nil {
		return usageError(err)
	}
	f.labels = labels
	return nil
}

// labelsOf returns the labels --namespace-labels gives namespace (nil when
// none).
func (f *clusterFlags) labelsOf(namespace string) map[string]string {
	return f.labels[namespace]
}

// namespaces returns every namespace --namespace-labels names, and
// namespace, with their labels.
func (f *clusterFlags) namespaces(namespace string) map[string]map[string]string {
	out := map[string]map[string]string{namespace: f.labels[namespace]}
	for ns, l := range f.labels {
		out[ns] = l
	}
	return out
}

// manifests applies the API server's defaults to ms, unless --no-defaults.
func (f *clusterFlags) manifests(ms []runtime.Manifest) ([]runtime.Manifest, error) {
	if f.NoDefaults {
		return ms, nil
	}
	out, err := defaults.ApplyManifests(ms)
	if err != nil {
		return nil, usageError(err)
	}
	return out, nil
}

// object applies the API server's defaults to obj (read from flag), unless
// --no-defaults; nil stays nil.
func (f *clusterFlags) object(flag string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if f.NoDefaults || obj == nil {
		return obj, nil
	}
	out, err := defaults.Apply(obj)
	if err != nil {
		return nil, usageError(fmt.Errorf("%s: cannot apply the API server's defaults: %w; fix the manifest, or judge it as written with --no-defaults", flag, err))
	}
	return out, nil
}
