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

	"github.com/admitc/admitc/internal/inputfile"
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
	err := EachManifest(paths, func(n string) { notices = append(notices, n) }, func(m Manifest) error {
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, notices, err
	}
	if len(out) == 0 {
		return nil, notices, fmt.Errorf("no Kubernetes objects in %s", strings.Join(paths, ", "))
	}
	return out, notices, nil
}

// skipReason reads the start of a file in a directory and says why it is
// not a manifest, or "".
func skipReason(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("read manifest %s: %w", name, err)
	}
	return notAnObjectFile(head), nil
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

// EachManifest reads manifests as ReadManifests does, but hands each object
// to fn as soon as its document is decoded, so a caller can judge and print
// it before the next document is read. It stops at the first error of
// reading or of fn.
// Files inside a directory that hold no Kubernetes object are skipped and
// named to notice.
func EachManifest(paths []string, notice func(string), fn func(Manifest) error) error {
	for _, p := range paths {
		files, inDir, err := manifestFiles(p)
		if err != nil {
			return err
		}
		for _, f := range files {
			if inDir {
				if why, err := skipReason(f); err != nil {
					return err
				} else if why != "" {
					notice(fmt.Sprintf("skipped %s: %s", f, why))
					continue
				}
			}
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
			if e.IsDir() {
				continue
			}
			name := filepath.Join(p, e.Name())
			if err := inputfile.CheckEntry(name, e); err != nil {
				return nil, true, fmt.Errorf("read manifest directory: %w", err)
			}
			files = append(files, name)
		}
	}
	sort.Strings(files)
	return files, true, nil
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
