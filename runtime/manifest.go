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
	err := EachManifest(paths, func(m Manifest) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachManifest reads manifests as ReadManifests does, but hands each object
// to fn as soon as its document is decoded, so a caller can judge and print
// it before the next document is read. It stops at the first error of
// reading or of fn.
func EachManifest(paths []string, fn func(Manifest) error) error {
	for _, p := range paths {
		files, err := manifestFiles(p)
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := eachInFile(f, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func eachInFile(name string, fn func(Manifest) error) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	r := &boundedReader{r: f, left: MaxManifestBytes + 1}
	err = DecodeManifestStream(name, r, fn)
	if r.left <= 0 {
		return fmt.Errorf("manifest %s is larger than %d bytes", name, MaxManifestBytes)
	}
	return err
}

// boundedReader reads at most left bytes; left reaching 0 means too large.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
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
	var out []Manifest
	err := DecodeManifestStream(name, bytes.NewReader(data), func(m Manifest) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeManifestStream decodes r as DecodeManifests does, one document at a
// time, handing each object to fn before the next document is read.
func DecodeManifestStream(name string, r io.Reader, fn func(Manifest) error) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	found := 0
	for doc := 1; ; doc++ {
		objs, err := decodeDocument(dec, name, doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, m := range objs {
			found++
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	if found == 0 {
		return fmt.Errorf("%s: no objects found", name)
	}
	return nil
}

// decodeDocument decodes the next document into its objects (none for an
// empty document); io.EOF after the last.
func decodeDocument(dec *utilyaml.YAMLOrJSONDecoder, name string, doc int) ([]Manifest, error) {
	var raw json.RawMessage
	err := dec.Decode(&raw)
	if errors.Is(err, io.EOF) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: document %d is not valid JSON or YAML: %v", name, doc, err)
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	// Integers become int64, as the API server decodes them.
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s: document %d must be an object: %v", name, doc, err)
	}
	if obj == nil {
		return nil, nil
	}
	src := name
	if doc > 1 {
		src = fmt.Sprintf("%s#%d", name, doc)
	}
	return expandList(src, obj)
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
