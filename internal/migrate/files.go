package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/ir"
)

// policyFiles lists the JSON and YAML files of paths, each with what is
// known of it before compiling: a file named as a path is a candidate
// (Status ""); in a directory (recursively, hidden directories left out)
// a file with a Kyverno policy or an admission policy is a candidate, one
// without is skipped, and one that cannot be read (not a regular file) is
// refused. A path that does not exist, or no candidate at all, is an error.
func policyFiles(paths []string) ([]string, []FileReport, error) {
	var cands []string
	var files []FileReport
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			cands = append(cands, p)
			files = append(files, FileReport{File: p})
			continue
		}
		found, err := walkPolicyDir(p)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range found {
			if f.Status == "" {
				cands = append(cands, f.File)
			}
		}
		files = append(files, found...)
	}
	if len(cands) == 0 {
		return nil, nil, fmt.Errorf("no policy files in %s%s", strings.Join(paths, ", "), skippedFiles(files))
	}
	return cands, files, nil
}

func walkPolicyDir(dir string) ([]FileReport, error) {
	var out []FileReport
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !compiler.IsPolicyFile(path) {
			return nil
		}
		skip, err := classify(path)
		switch {
		case err != nil:
			out = append(out, FileReport{File: path, Status: FileRefused, Reason: "unreadable: " + err.Error()})
		case skip != "":
			out = append(out, FileReport{File: path, Status: FileSkipped, Reason: skip})
		default:
			out = append(out, FileReport{File: path})
		}
		return nil
	})
	return out, err
}

func skippedFiles(files []FileReport) string {
	var out []string
	for _, f := range files {
		out = append(out, f.File+": "+f.Reason)
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// classify says why a file found in a directory is not migrated, or ""
// when it holds a Kyverno policy (of any kind: the compiler says which it
// does not read) or an admission policy or binding, or is not valid YAML
// (the compiler says where).
func classify(path string) (string, error) {
	data, err := inputfile.ReadFile(path)
	if err != nil {
		return "", err
	}
	if why := compiler.NotAPolicyFile(data); why != "" {
		return why, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var kinds []string
	for {
		var head struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		err := dec.Decode(&head)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || migratable(head.APIVersion, head.Kind) {
			return "", nil
		}
		kinds = append(kinds, strings.TrimSpace(head.APIVersion+" "+head.Kind))
	}
	return "not a Kyverno policy or an admission policy (" + strings.Join(kinds, ", ") + ")", nil
}

// migratable says whether a document of apiVersion and kind is for
// migrate: a kyverno.io or policies.kyverno.io object, or an
// admissionregistration.k8s.io admission policy or binding.
func migratable(apiVersion, kind string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	switch group {
	case "kyverno.io", "policies.kyverno.io":
		return true
	case "admissionregistration.k8s.io":
		return strings.HasSuffix(kind, "AdmissionPolicy") || strings.HasSuffix(kind, "AdmissionPolicyBinding")
	}
	return false
}

// compileFiles reads and compiles the candidate files, leaving out each
// file that cannot be read or has a diagnostic (refused, file to reason),
// and compiling the rest again, until what is left compiles; inputs are
// the files compiled. A diagnostic without a file is an error.
func compileFiles(files []string, crds []*apiextensionsv1.CustomResourceDefinition) (set *ir.PolicySet, inputs []string, refused map[string]string, err error) {
	refused = map[string]string{}
	var srcs []compiler.Source
	for _, f := range files {
		src, err := compiler.ReadSources([]string{f})
		if err != nil {
			refused[f] = "unreadable: " + err.Error()
			continue
		}
		srcs = append(srcs, src...)
	}
	for {
		set, diags := compiler.Compile(srcs, compiler.Options{KeepGoing: true, CRDs: crds})
		if len(diags) == 0 {
			for _, s := range srcs {
				inputs = append(inputs, s.Name)
			}
			return set, inputs, refused, nil
		}
		bad := map[string][]string{}
		for _, d := range diags {
			if d.Origin.File == "" {
				return nil, nil, nil, fmt.Errorf("policies do not compile:\n%s", diags.Error())
			}
			bad[d.Origin.File] = append(bad[d.Origin.File], d.String())
		}
		kept := srcs[:0:0]
		for _, s := range srcs {
			if msgs, ok := bad[s.Name]; ok {
				refused[s.Name] = "does not compile: " + strings.Join(msgs, "; ")
				continue
			}
			kept = append(kept, s)
		}
		if len(kept) == len(srcs) {
			return nil, nil, nil, fmt.Errorf("policies do not compile:\n%s", diags.Error())
		}
		srcs = kept
	}
}

// fileReports completes the report of every file: compiled files are
// migrated, unless every rule of their policies was refused; refused ones
// carry their reason; in name order.
func fileReports(files []FileReport, inputs []string, refused map[string]string, srcs []*source) []FileReport {
	compiled := map[string]bool{}
	for _, f := range inputs {
		compiled[f] = true
	}
	allRefused := everyRuleRefused(srcs)
	out := make([]FileReport, 0, len(files))
	for _, f := range files {
		switch {
		case f.Status != "":
		case compiled[f.File] && allRefused[f.File] > 0:
			f.Status, f.Reason = FileRefused, fmt.Sprintf("every rule of its policies was refused (%d rules; see why below)", allRefused[f.File])
		case compiled[f.File]:
			f.Status = FileMigrated
		default:
			f.Status, f.Reason = FileRefused, refused[f.File]
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// everyRuleRefused counts, per input file whose every rule was refused,
// its rules; a file with a rule translated is not in it.
func everyRuleRefused(srcs []*source) map[string]int {
	rules := map[string]int{}
	translated := map[string]bool{}
	for _, s := range srcs {
		for _, r := range s.report.Rules {
			rules[s.file]++
			translated[s.file] = translated[s.file] || r.Status != Refused
		}
	}
	out := map[string]int{}
	for f, n := range rules {
		if !translated[f] {
			out[f] = n
		}
	}
	return out
}
