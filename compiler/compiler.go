package compiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// Source is one policy file: its name (used in diagnostics) and its bytes.
type Source struct {
	Name string
	Data []byte
}

// Options tune compilation.
type Options struct {
	// KubeVersion is the oldest API server the output must run on; CEL is
	// type-checked against the libraries that version offers. Nil means the
	// runtime's own version.
	KubeVersion *version.Version
}

// Compile parses, lowers and type-checks the given policy files into one
// policy set. Policy names must be unique across all files. On any error it
// returns all diagnostics it found and a nil set.
func Compile(sources []Source, opts Options) (*ir.PolicySet, Diagnostics) {
	set := &ir.PolicySet{Version: ir.Version, Policies: []ir.Policy{}}
	var diags Diagnostics
	names := map[string]ir.Origin{}
	for _, src := range sources {
		r := &reader{file: src.Name, lines: strings.Split(string(src.Data), "\n"), exprNodes: map[string]field{}}
		for _, d := range r.parse(src.Data) {
			r.lower(d)
			d.obj.done(fmt.Sprintf("a policy of type %q", d.policy.Type))
			if first, dup := names[d.policy.Name]; dup && d.policy.Name != "" {
				r.errorf(d.obj.fields["name"].origin, "policy name %q is already used at %s; names must be unique across all policy files", d.policy.Name, fmtOrigin(first))
			} else if d.policy.Name != "" {
				names[d.policy.Name] = d.obj.fields["name"].origin
			}
			if len(r.diags) == 0 && d.info.kind != "" {
				r.checkCEL(&d.policy, opts.KubeVersion)
			}
			set.Policies = append(set.Policies, d.policy)
		}
		diags = append(diags, r.diags...)
	}
	if len(diags) > 0 {
		diags.Sort()
		return nil, diags
	}
	return set, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (r *reader) parse(data []byte) []*policyDecl {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := 1, err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		r.errorf(ir.Origin{File: r.file, Line: line, Column: 1}, "not valid JSON or YAML: %s", strings.TrimPrefix(msg, "yaml: "))
		return nil
	}
	if len(doc.Content) == 0 {
		r.errorf(ir.Origin{File: r.file, Line: 1, Column: 1}, `empty policy file: expected an object with a "policies" list`)
		return nil
	}
	return r.readFile(field{node: doc.Content[0], origin: ir.Origin{File: r.file, Line: doc.Content[0].Line, Column: doc.Content[0].Column}})
}

// checkCEL type-checks the policy with the API server's compiler and maps
// each error back to its place in the file.
func (r *reader) checkCEL(p *ir.Policy, kubeVersion *version.Version) {
	errs, err := celenv.Check(p, kubeVersion)
	if err != nil {
		r.errorf(p.Origin, "%v", err)
		return
	}
	for _, e := range errs {
		r.diags = append(r.diags, r.celDiagnostic(p, e))
	}
}

func (r *reader) celDiagnostic(p *ir.Policy, e celenv.ExprError) Diagnostic {
	f, fromFile := r.exprNodes[e.Origin.Path]
	if !fromFile || p.Type != TypeCEL {
		// A built-in type's generated CEL failed: a bug in admitc or a library
		// the target version lacks. Point at the policy and show the CEL.
		return Diagnostic{Origin: p.Origin, Message: fmt.Sprintf("%s cannot be compiled for this Kubernetes version: %s (generated CEL: %s)", p.Type, e.Message, e.Expression)}
	}
	o := e.Origin
	n := f.node
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && e.Line > 0:
		o.Line = n.Line + e.Line
		if o.Line-1 < len(r.lines) {
			text := r.lines[o.Line-1]
			o.Column = len(text) - len(strings.TrimLeft(text, " ")) + e.Column
		}
	case e.Line == 1:
		o.Line, o.Column = n.Line, n.Column+e.Column-1
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			o.Column++
		}
	}
	d := Diagnostic{Origin: o, Message: e.Message}
	if o.Line-1 < len(r.lines) && o.Line > 0 {
		d.SourceLine = r.lines[o.Line-1]
	}
	return d
}

// ReadSources reads policy files and directories (their *.json, *.yaml and
// *.yml files, sorted by name, not recursive).
func ReadSources(paths []string) ([]Source, error) {
	var out []Source
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read policy file: %w", err)
			}
			out = append(out, Source{Name: f, Data: data})
		}
	}
	return out, nil
}

// IsPolicyFile reports whether ReadSources reads a directory entry named
// name as a policy file: JSON or YAML, by extension.
func IsPolicyFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

func expand(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("read policy directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if IsPolicyFile(e.Name()) && !e.IsDir() {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, errors.New("policy directory " + p + " holds no .json, .yaml or .yml files")
	}
	return files, nil
}
