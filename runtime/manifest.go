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
	var out []Manifest
	for _, p := range paths {
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := readBounded(f)
			if err != nil {
				return nil, err
			}
			ms, err := DecodeManifests(f, data)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
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

func manifestFiles(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("read manifest directory: %w", err)
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
	return files, nil
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
