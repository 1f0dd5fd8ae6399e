package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/admitc/admitc/ir"
)

// MaxPolicyFileBytes bounds one policy file, as runtime.MaxManifestBytes
// bounds a manifest file.
const MaxPolicyFileBytes = 16 << 20

// maxExpandedNodes bounds how many nodes YAML aliases may expand a file to,
// so a few lines of nested aliases cannot make the compiler walk billions.
const maxExpandedNodes = 1 << 20

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// documents splits a policy file into its documents: every document of a
// YAML stream (separated by ---), or every JSON value of a file of JSON values
// written back to back. Each document keeps the positions it has in the file.
// Empty documents are skipped; content that is not a document is an error.
func (r *reader) documents(data []byte) []*yaml.Node {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return r.jsonDocuments(data)
	}
	return r.yamlDocuments(data)
}

func (r *reader) yamlDocuments(data []byte) []*yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			r.yamlError(err, 0)
			return docs
		}
		if n := r.documentRoot(&doc); n != nil {
			docs = append(docs, n)
		}
	}
}

// jsonDocuments reads JSON values back to back. Each value is parsed again as
// YAML (JSON is YAML) for its node positions, shifted to where it starts.
func (r *reader) jsonDocuments(data []byte) []*yaml.Node {
	dec := json.NewDecoder(bytes.NewReader(data))
	lineCol := lineIndex(data)
	var docs []*yaml.Node
	for {
		start := skipSpace(data, int(dec.InputOffset()))
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs
		}
		line, col := lineCol(start)
		if err != nil {
			at := start
			var se *json.SyntaxError
			if errors.As(err, &se) {
				at = int(se.Offset) - 1
			}
			l, c := lineCol(at)
			r.errorf(ir.Origin{File: r.file, Line: l, Column: c}, "not valid JSON: %v; a policy file holds JSON values or YAML documents (separated by ---), nothing else", err)
			return docs
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			r.yamlError(err, line-1)
			return docs
		}
		shiftPositions(&doc, line-1, col-1)
		if n := r.documentRoot(&doc); n != nil {
			docs = append(docs, n)
		}
	}
}

// documentRoot returns the document's top node with aliases and merge keys
// expanded, or nil for an empty document.
func (r *reader) documentRoot(doc *yaml.Node) *yaml.Node {
	if len(doc.Content) == 0 {
		return nil
	}
	n := doc.Content[0]
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "" {
		return nil
	}
	budget := maxExpandedNodes
	if err := expandAliases(n, &budget); err != nil {
		r.errorf(ir.Origin{File: r.file, Line: n.Line, Column: n.Column}, "%v", err)
		return nil
	}
	return n
}

func (r *reader) yamlError(err error, lineOffset int) {
	line, msg := 1, err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	r.errorf(ir.Origin{File: r.file, Line: line + lineOffset, Column: 1}, "not valid JSON or YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// expandAliases replaces every alias by the node it names and applies merge
// keys (<<: *base, or a list of them): the mapping's own keys win, then the
// merged mappings in order. budget counts the nodes visited.
func expandAliases(n *yaml.Node, budget *int) error {
	*budget--
	if *budget < 0 {
		return fmt.Errorf("YAML aliases expand this document to more than %d nodes; write the values out instead", maxExpandedNodes)
	}
	for i, c := range n.Content {
		for c.Kind == yaml.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		n.Content[i] = c
		if err := expandAliases(c, budget); err != nil {
			return err
		}
	}
	if n.Kind == yaml.MappingNode {
		n.Content = mergeKeys(n.Content)
	}
	return nil
}

// mergeKeys applies YAML merge keys to a mapping's key/value pairs.
func mergeKeys(pairs []*yaml.Node) []*yaml.Node {
	var own, merged []*yaml.Node
	for i := 0; i+1 < len(pairs); i += 2 {
		k, v := pairs[i], pairs[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!merge" {
			own = append(own, k, v)
			continue
		}
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, s := range sources {
			if s.Kind == yaml.MappingNode {
				merged = append(merged, s.Content...)
			} else {
				own = append(own, k, v) // not mergeable: left for the reader to report
			}
		}
	}
	if merged == nil {
		return pairs
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(own); i += 2 {
		seen[own[i].Value] = true
	}
	out := own
	for i := 0; i+1 < len(merged); i += 2 {
		if !seen[merged[i].Value] {
			seen[merged[i].Value] = true
			out = append(out, merged[i], merged[i+1])
		}
	}
	return out
}

func shiftPositions(n *yaml.Node, lines, cols int) {
	if n.Line == 1 {
		n.Column += cols
	}
	n.Line += lines
	for _, c := range n.Content {
		shiftPositions(c, lines, cols)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && strings.IndexByte(" \t\r\n", data[i]) >= 0 {
		i++
	}
	return i
}

// lineIndex returns a function giving the 1-based line and column of a byte
// offset in data.
func lineIndex(data []byte) func(int) (int, int) {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return func(i int) (int, int) {
		line := sort.SearchInts(starts, i+1) // starts[line-1] <= i
		return line, i - starts[line-1] + 1
	}
}
