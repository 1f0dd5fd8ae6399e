package verify

import (
	"encoding/json"
	"fmt"

	"github.com/kyverno/go-jmespath"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/runtime"
)

// What Kyverno's CEL libraries read outside the request comes, in kyverno
// test v1.19.1 (commands/test/test.go, processor/utils.go
// NewContextProvider), from three places of the test:
//
//   - clusterResources files (kind ClusterResource, spec.resources): the
//     objects of a fake cluster, which resource.Get and resource.List read
//     (labels selecting as in a cluster); a test with them runs "in
//     cluster" and the context file is not read;
//   - otherwise a context file (kind Context, spec.resources): the objects
//     of the CLI's fake context, whose List returns every object of
//     exactly the namespace asked for, whatever labels are asked for;
//   - globalContextEntries: the entries globalContext.Get reads (data or
//     resources, an optional fieldPath and projections, each a JMESPath).

// contextFile is kyverno test's Context (and ClusterResource) file.
type contextFile struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Spec       struct {
		Resources []map[string]any `json:"resources,omitempty"`
		// Images are image data for image.GetMetadata, which admitc
		// refuses (it reads registries); CRDs only teach the CLI's REST
		// mapper resource names, which admitc derives from kinds.
		Images []any    `json:"images,omitempty"`
		CRDs   []string `json:"crds,omitempty"`
	} `json:"spec"`
}

// globalContextEntry is v1alpha1.GlobalContextEntryValue.
type globalContextEntry struct {
	Name          string           `json:"name"`
	Data          any              `json:"data,omitempty"`
	Resources     []map[string]any `json:"resources,omitempty"`
	ResourceFiles []string         `json:"resourceFiles,omitempty"`
	FieldPath     string           `json:"fieldPath,omitempty"`
	Projections   []struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"projections,omitempty"`
}

// readLibrary reads what the test gives Kyverno's libraries; nil when it
// gives nothing.
func (s *kyvernoSuite) readLibrary(t *kyvernoTest) (*runtime.StaticObjects, error) {
	lib := &runtime.StaticObjects{}
	switch {
	case len(t.ClusterResources) > 0:
		objs, err := s.clusterObjects(t.ClusterResources)
		if err != nil {
			return nil, err
		}
		// The CLI then reads CEL global context entries from its
		// (empty) global context store, not from the test.
		lib.Objects = objs
		return lib, nil
	case t.Context != "":
		objs, err := s.contextObjects(t.Context, "Context")
		if err != nil {
			return nil, fmt.Errorf("context: %w", err)
		}
		lib.Objects = objs
	}
	lib.FakeContext = true
	if len(t.GlobalContextEntries) > 0 {
		lib.GlobalContext = map[string]any{}
		for i, raw := range t.GlobalContextEntries {
			name, data, err := s.globalContextEntry(raw)
			if err != nil {
				return nil, fmt.Errorf("globalContextEntries[%d]: %w", i, err)
			}
			lib.GlobalContext[name] = data
		}
	}
	if len(lib.Objects) == 0 && lib.GlobalContext == nil {
		return nil, nil
	}
	return lib, nil
}

// contextObjects are the resources of a Context or ClusterResource file.
func (s *kyvernoSuite) contextObjects(file, kind string) ([]*unstructured.Unstructured, error) {
	var c contextFile
	if err := s.readYAML(file, &c); err != nil {
		return nil, err
	}
	if c.Kind != kind {
		return nil, fmt.Errorf("%s: kind is %q, want %s", file, c.Kind, kind)
	}
	var out []*unstructured.Unstructured
	for _, r := range c.Spec.Resources {
		out = append(out, &unstructured.Unstructured{Object: r})
	}
	return out, nil
}

// globalContextEntry resolves one entry as kyverno test's
// resolveGlobalContextMockData does.
func (s *kyvernoSuite) globalContextEntry(raw any) (string, any, error) {
	data, err := json.Marshal(raw)
	if err != nil {
		return "", nil, err
	}
	var e globalContextEntry
	if err := yaml.UnmarshalStrict(data, &e); err != nil {
		return "", nil, err
	}
	var root any = e.Data
	if len(e.Resources) > 0 || len(e.ResourceFiles) > 0 {
		list, err := s.entryResources(e)
		if err != nil {
			return "", nil, err
		}
		root = list
	} else if root == nil {
		if len(e.Projections) > 0 {
			return "", nil, fmt.Errorf("globalContextEntries %q: data is required when projections are set", e.Name)
		}
		return e.Name, nil, nil
	}
	if e.FieldPath != "" {
		if root, err = jmespath.Search(e.FieldPath, root); err != nil {
			return "", nil, fmt.Errorf("globalContextEntries %q fieldPath: %w", e.Name, err)
		}
	}
	if len(e.Projections) == 0 {
		return e.Name, root, nil
	}
	out := map[string]any{}
	for _, p := range e.Projections {
		v, err := jmespath.Search(p.Path, root)
		if err != nil {
			return "", nil, fmt.Errorf("globalContextEntries %q projection %q path %q: %w", e.Name, p.Name, p.Path, err)
		}
		out[p.Name] = v
	}
	return e.Name, out, nil
}

// entryResources are an entry's inline resources and those of its files.
func (s *kyvernoSuite) entryResources(e globalContextEntry) ([]any, error) {
	var list []any
	for _, r := range e.Resources {
		list = append(list, r)
	}
	for _, f := range e.ResourceFiles {
		if _, err := inputfile.ReadFile(s.path(f)); err != nil {
			return nil, err
		}
		ms, err := runtime.ReadManifests([]string{s.path(f)})
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			list = append(list, m.Object.Object)
		}
	}
	return list, nil
}

// clusterObjects are the objects of kyverno test's fake cluster: the
// test's resources and parameter objects and the clusterResources files'
// resources, each once (the CLI fails on a duplicate).
func (s *kyvernoSuite) clusterObjects(files []string) ([]*unstructured.Unstructured, error) {
	all := append(append([]*unstructured.Unstructured{}, s.resources...), s.params...)
	for _, f := range files {
		objs, err := s.contextObjects(f, "ClusterResource")
		if err != nil {
			return nil, fmt.Errorf("clusterResources: %w", err)
		}
		all = append(all, objs...)
	}
	seen := map[string]bool{}
	for _, o := range all {
		k := resourceKey(o)
		if seen[k] {
			return nil, fmt.Errorf("clusterResources: %s %s/%s is given twice (kyverno test fails: it already exists in its fake cluster)", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		seen[k] = true
	}
	return all, nil
}

// clusterNamespace is a namespace of kyverno test's fake cluster, which
// the CLI reads for a resource's namespace labels when the values file
// gives none; it fails the test when the namespace is not there.
func (s *kyvernoSuite) clusterNamespace(name string) (map[string]string, error) {
	for _, o := range s.library.Objects {
		if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" && o.GetName() == name {
			return o.GetLabels(), nil
		}
	}
	return nil, fmt.Errorf("clusterResources: namespace %q of the test's resources is not among them (kyverno test fails: it reads the namespace's labels from its fake cluster)", name)
}
