package compiler

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/inputfile"
)

// CustomResourceDefinitions make the kinds they define resolvable: a
// policy that names a custom resource's kind (Kyverno's kinds:
// [Certificate]) matches the CRD's group, served versions and plural, and
// is written against its schema (Options.CRDs).

// MaxCRDFileBytes bounds one CRD file: a published bundle of CRDs (every
// CRD of cert-manager, say) is a few MiB.
const MaxCRDFileBytes = 64 << 20

// crdAPIVersion is the only CRD API admitc reads.
var crdAPIVersion = apiextensionsv1.SchemeGroupVersion.String()

// ReadCRDs reads the CustomResourceDefinitions in paths: YAML or JSON
// files, or directories of them (their .yaml, .yml and .json files),
// multi-document, `kubectl get crd -o yaml` lists included. Documents of
// other kinds are left out; a CRD of another API version than
// apiextensions.k8s.io/v1, a CRD given twice and a path that holds no CRD
// are errors.
func ReadCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	seen := map[string]string{}
	for _, p := range paths {
		files, err := crdFiles(p)
		if err != nil {
			return nil, err
		}
		found := 0
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			for _, crd := range crds {
				if first, ok := seen[crd.Name]; ok {
					return nil, fmt.Errorf("CustomResourceDefinition %s is given twice: in %s and in %s", crd.Name, first, f)
				}
				seen[crd.Name] = f
			}
			found += len(crds)
			out = append(out, crds...)
		}
		if found == 0 {
			return nil, fmt.Errorf("%s holds no %s CustomResourceDefinition", p, crdAPIVersion)
		}
	}
	return out, nil
}

// crdFiles lists the files of path p: p itself, or a directory's YAML and
// JSON files in name order.
func crdFiles(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read CRD file: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("read CRD directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || !IsPolicyFile(e.Name()) {
			continue
		}
		name := filepath.Join(p, e.Name())
		if err := inputfile.CheckEntry(name, e); err != nil {
			return nil, fmt.Errorf("read CRD directory: %w", err)
		}
		files = append(files, name)
	}
	sort.Strings(files)
	return files, nil
}

// readCRDFile reads the CRDs of one file.
func readCRDFile(name string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read CRD file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCRDFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read CRD file %s: %w", name, err)
	}
	if len(data) > MaxCRDFileBytes {
		return nil, fmt.Errorf("CRD file %s is larger than %d MiB", name, MaxCRDFileBytes>>20)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		crds, err := crdsOf(doc)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", name, i, err)
		}
		out = append(out, crds...)
	}
}

// listOrObject is the head of a document: a CRD, a List of objects, or
// another object.
type listOrObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// crdsOf is the CRD a document is, or the CRDs of a List; none for any
// other object.
func crdsOf(doc []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var head listOrObject
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	switch {
	case head.Kind == "List":
		var out []*apiextensionsv1.CustomResourceDefinition
		for _, item := range head.Items {
			crds, err := crdsOf(item)
			if err != nil {
				return nil, err
			}
			out = append(out, crds...)
		}
		return out, nil
	case head.Kind != "CustomResourceDefinition":
		return nil, nil
	case head.APIVersion != crdAPIVersion:
		return nil, fmt.Errorf("a CustomResourceDefinition of %s: admitc reads %s (the API server serves no other since Kubernetes 1.22)", head.APIVersion, crdAPIVersion)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(doc, crd); err != nil {
		return nil, err
	}
	return []*apiextensionsv1.CustomResourceDefinition{crd}, nil
}
