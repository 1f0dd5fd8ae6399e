package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Manifest is one object read from a manifest file.
type Manifest struct {
	// Source names where it came from: file, and the document and item index when useful.
	Source string
	Object *unstructured.Unstructured
}

// MaxManifestBytes bounds one manifest file.
const MaxManifestBytes = 16 << 20

// ReadManifests reads manifest files and directories (their .json, .yaml and
// .yml files, sorted, not recursive).
func ReadManifests(paths []string) ([]Manifest, error) {
	ms, _, err := ReadManifestsReport(paths)
	return ms, err
}

// ReadManifestsReport is ReadManifests that also skips, inside directories,
// files that hold no Kubernetes object (kustomization.yaml, Helm's
// values.yaml and Chart.yaml: no kind, or a kustomize.config.k8s.io kind),
// returning a notice for each. A file named explicitly is never skipped, and
// reading no object at all is an error.
func ReadManifestsReport(paths []string) ([]Manifest, []string, error) {
	var out []Manifest
	var notices []string
	for _, p := range paths {
		files, inDir, err := manifestFiles(p)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			data, err := readBounded(f)
			if err != nil {
				return nil, nil, err
			}
			if inDir {
				if why := notAnObjectFile(data); why != "" {
					notices = append(notices, fmt.Sprintf("skipped %s: %s", f, why))
					continue
				}
			}
			ms, err := DecodeManifests(f, data)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, ms...)
		}
	}
	if len(out) == 0 {
		return nil, notices, fmt.Errorf("no Kubernetes objects in %s", strings.Join(paths, ", "))
	}
	return out, notices, nil
}

// notAnObjectFile says why a file's first document is not a Kubernetes
// object, or "" when it is one (or is not valid YAML: that is reported when
// the file is decoded).
func notAnObjectFile(data []byte) string {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	if err := dec.Decode(&head); err != nil {
		return ""
	}
	switch {
	case head.Kind == "":
		return "not a Kubernetes object (no kind)"
	case strings.HasPrefix(head.APIVersion, "kustomize.config.k8s.io/"):
		return "a kustomize " + head.Kind + ", not an object the API server admits"
	}
	return ""
}

func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", name, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest %s is larger than %d bytes", name, MaxManifestBytes)
	}
	return data, nil
}

// manifestFiles lists the files of path p; inDir is true when p is a directory.
func manifestFiles(p string) ([]string, bool, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, false, fmt.Errorf("read manifest: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, false, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, true, fmt.Errorf("read manifest directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".json", ".yaml", ".yml":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	sort.Strings(files)
	return files, true, nil
}

// DecodeManifests decodes JSON or (multi-document) YAML into objects; a
// kind: List is expanded into its items. Every object needs apiVersion,
// kind and metadata.name.
func DecodeManifests(name string, data []byte) ([]Manifest, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Manifest
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d is not valid JSON or YAML: %v", name, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		// Integers become int64, as the API server decodes them.
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d must be an object: %v", name, doc, err)
		}
		if obj == nil {
			continue
		}
		src := name
		if doc > 1 {
			src = fmt.Sprintf("%s#%d", name, doc)
		}
		objs, err := expandList(src, obj)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no objects found", name)
	}
	return out, nil
}

func expandList(src string, obj map[string]any) ([]Manifest, error) {
	u := &unstructured.Unstructured{Object: obj}
	if !u.IsList() {
		if err := checkObject(src, u); err != nil {
			return nil, err
		}
		return []Manifest{{Source: src, Object: u}}, nil
	}
	items, ok := obj["items"].([]any)
	if !ok {
		return nil, fmt.Errorf("%s: %s items must be a list", src, u.GetKind())
	}
	var out []Manifest
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: items[%d] must be an object", src, i)
		}
		item := &unstructured.Unstructured{Object: m}
		isrc := fmt.Sprintf("%s items[%d]", src, i)
		if err := checkObject(isrc, item); err != nil {
			return nil, err
		}
		out = append(out, Manifest{Source: isrc, Object: item})
	}
	return out, nil
}

func checkObject(src string, u *unstructured.Unstructured) error {
	var missing []string
	if u.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if u.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if u.GetName() == "" && u.GetGenerateName() == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: object is missing %s", src, strings.Join(missing, ", "))
	}
	if _, ok := u.Object["metadata"].(map[string]any); !ok {
		return fmt.Errorf("%s: metadata must be an object", src)
	}
	return nil
}
