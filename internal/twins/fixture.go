package twins

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/runtime"
)

// Fixture is one Kyverno pattern fixture and its twin.
type Fixture struct {
	// Name is the fixture's directory name, the same in both trees.
	Name string
	// Original is the ClusterPolicy file, Twin the twin's policy file.
	Original, Twin string
	// Resources are the objects the original's Kyverno test judges.
	Resources []*unstructured.Unstructured
	// Params are the parameter objects in the twin's params.yaml, given to
	// both policies: a twin that reads a ConfigMap takes it as params (a
	// ValidatingAdmissionPolicy's paramKind), and the translation of a
	// ClusterPolicy's configMap context entry reads it as params too.
	Params []*unstructured.Unstructured
}

// Originals and Twins are the directories, under the examples directory,
// of the fixtures and of their twins.
const (
	Originals = "kyverno-pattern"
	Twins     = "twins"
)

// ParamsFile is the file, beside a twin's policy.yaml, of the parameter
// objects it reads.
const ParamsFile = "params.yaml"

// testFile is the part of a Kyverno test (cli.kyverno.io/v1alpha1 Test)
// that names the objects it judges.
type testFile struct {
	Resources []string `json:"resources"`
}

// Fixtures lists every fixture under examples (the repository's examples
// directory), sorted by name. A fixture without a twin is an error.
func Fixtures(examples string) ([]Fixture, error) {
	originals, err := filepath.Glob(filepath.Join(examples, Originals, "*", "policy.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(originals)
	var out []Fixture
	for _, o := range originals {
		f, err := readFixture(examples, o)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fixture under %s", filepath.Join(examples, Originals))
	}
	return out, nil
}

func readFixture(examples, original string) (Fixture, error) {
	name := filepath.Base(filepath.Dir(original))
	f := Fixture{Name: name, Original: original, Twin: filepath.Join(examples, Twins, name, "policy.yaml")}
	if _, err := os.Stat(f.Twin); err != nil {
		return f, fmt.Errorf("fixture %s has no twin: %w", name, err)
	}
	var err error
	if f.Resources, err = testResources(filepath.Dir(original)); err != nil {
		return f, fmt.Errorf("fixture %s: %w", name, err)
	}
	params := filepath.Join(filepath.Dir(f.Twin), ParamsFile)
	if _, err := os.Stat(params); err == nil {
		if f.Params, err = readObjects("", []string{params}); err != nil {
			return f, fmt.Errorf("twin %s: %w", name, err)
		}
	}
	return f, nil
}

// testResources reads the resources that the Kyverno test in
// dir/.kyverno-test names.
func testResources(dir string) ([]*unstructured.Unstructured, error) {
	testDir := filepath.Join(dir, ".kyverno-test")
	data, err := os.ReadFile(filepath.Join(testDir, "kyverno-test.yaml"))
	if err != nil {
		return nil, err
	}
	var t testFile
	if err := yaml.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", testDir, err)
	}
	return readObjects(testDir, t.Resources)
}

func readObjects(dir string, files []string) ([]*unstructured.Unstructured, error) {
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f))
	}
	var out []*unstructured.Unstructured
	err := runtime.EachManifest(paths, func(string) {}, func(m runtime.Manifest) error {
		out = append(out, m.Object)
		return nil
	})
	return out, err
}
