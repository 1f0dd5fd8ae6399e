package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/internal/verify"
)

// A Kyverno test of the source policies, rewritten for their successors:
// each expected result names the successor that now answers for the
// resource (the rule's own policy, or the autogen policy of its kind),
// with the answer a ruleless Kyverno policy gives. Three answers change
// with the kind, and only those: a resource the rule's match or exclude
// leaves out is skipped by the successor's match condition (skip, where a
// rule has no response), a CEL evaluation error is an error (where a
// rule reports fail), and a mutation that changes nothing passes (where a
// mutate rule reports skip, "no patches applied"). A resource no
// successor matches, or whose rule was refused, is left out. The test's
// other files are copied beside it.

// successorRef is the successor an IR policy is now part of.
type successorRef struct{ name, kind string }

// migrateTests rewrites every Kyverno test found beside the input files
// whose policies are all being migrated.
func migrateTests(ctx context.Context, inputs []string, srcs []*source) ([]File, []TestReport, error) {
	tests, err := findTests(inputs)
	if err != nil {
		return nil, nil, err
	}
	byFile := map[string][]*source{}
	successors := map[string]successorRef{}
	for _, s := range srcs {
		byFile[absPath(s.file)] = append(byFile[absPath(s.file)], s)
		for _, t := range s.translations {
			for _, succ := range t.Successors {
				for _, p := range succ.Covers {
					successors[p.Name] = successorRef{succ.Name, succ.Kind}
				}
			}
		}
	}
	var files []File
	var reports []TestReport
	for _, tp := range tests {
		fs, rep, ok, err := migrateTest(ctx, tp, byFile, successors)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			files = append(files, fs...)
			reports = append(reports, rep)
		}
	}
	return files, reports, nil
}

// findTests are the kyverno-test.yaml files in the directories of the
// inputs and below (hidden directories included: .kyverno-test).
func findTests(inputs []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, in := range inputs {
		err := filepath.WalkDir(filepath.Dir(in), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == TestFile && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return a
}

// migrateTest rewrites one test; ok is false for a test of none of the
// inputs.
func migrateTest(ctx context.Context, tp string, byFile map[string][]*source, successors map[string]successorRef) ([]File, TestReport, bool, error) {
	rep := TestReport{Source: tp}
	t, err := verify.ReadKyvernoTest(tp)
	if err != nil {
		return nil, rep, false, nil
	}
	var srcs []*source
	for _, p := range t.Policies {
		s, ok := byFile[absPath(filepath.Join(filepath.Dir(tp), p))]
		if !ok {
			rep.Skipped = fmt.Sprintf("it also tests %s, which is not being migrated", p)
			continue
		}
		srcs = append(srcs, s...)
	}
	if len(srcs) == 0 {
		return nil, rep, false, nil
	}
	if rep.Skipped != "" {
		return nil, rep, true, nil
	}
	outDir := srcs[0].report.Dir + "/" + TestDir
	rep.Output = outDir + "/" + TestFile
	outcomes, err := verify.KyvernoOutcomes(ctx, tp)
	if err != nil {
		rep.Skipped = err.Error()
		return nil, rep, true, nil
	}
	migrated := *t
	migrated.Policies = successorPaths(outDir, srcs)
	migrated.Results = rewriteResults(t.Results, outcomes, successors, &rep)
	if len(migrated.Results) == 0 {
		// A test with no results passes whatever the policies do: not
		// written, so the refused rules' results stay visible.
		rep.Skipped = fmt.Sprintf("none of its %d expected results has a migrated policy to answer for it; no test is written (one without results would pass)", rep.Results)
		rep.Output = ""
		return nil, rep, true, nil
	}
	files, err := copyTestFiles(tp, outDir, t)
	if err != nil {
		rep.Skipped = err.Error()
		return nil, rep, true, nil
	}
	data, err := testYAML(&migrated)
	if err != nil {
		return nil, rep, false, err
	}
	return append([]File{{Path: rep.Output, Data: data}}, files...), rep, true, nil
}

// successorPaths are the successor files of srcs, relative to dir.
func successorPaths(dir string, srcs []*source) []string {
	var out []string
	for _, s := range srcs {
		for _, f := range s.report.Files {
			if path.Base(f) == VAPFile || path.Base(f) == MAPFile {
				continue
			}
			rel, err := filepath.Rel(filepath.FromSlash(dir), filepath.FromSlash(f))
			if err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
	}
	return out
}

// rowKey groups the rewritten answers of one expected result into rows.
type rowKey struct {
	successor successorRef
	kind      string
	result    string
	operation string
}

// rewriteResults turns each expected result into one row per successor,
// answer and kind, its resources named as in the source.
func rewriteResults(results []verify.KyvernoTestResult, outcomes []verify.KyvernoOutcome, successors map[string]successorRef, rep *TestReport) []verify.KyvernoTestResult {
	qualify := ambiguousNames(outcomes)
	var out []verify.KyvernoTestResult
	for i, res := range results {
		rep.Results++
		var order []rowKey
		rows := map[rowKey][]string{}
		as := answers(outcomes, i, successors)
		if len(as) == 0 {
			rep.Dropped += max(len(res.Resources), 1)
			rep.DroppedResources = append(rep.DroppedResources, fmt.Sprintf("%s %s of policy %s, rule %s: expected %s; the rule was not migrated (refused), so no policy answers for it",
				res.Kind, strings.Join(res.Resources, ", "), res.Policy, res.Rule, res.Result))
		}
		for _, a := range as {
			if a.status == "" {
				rep.Dropped++
				rep.DroppedResources = append(rep.DroppedResources, fmt.Sprintf("%s %s of policy %s, rule %s: expected %s; no migrated policy answers for it",
					a.kind, resourceName(a.namespace, a.name, map[string]bool{a.name: a.namespace != ""}), res.Policy, res.Rule, res.Result))
				continue
			}
			if a.status != res.Result {
				rep.Changed++
			}
			k := rowKey{successor: a.successor, kind: a.kind, result: a.status}
			if res.Operation != "" || a.operation != a.rulelessOperation {
				k.operation = a.operation
			}
			if _, ok := rows[k]; !ok {
				order = append(order, k)
			}
			rows[k] = append(rows[k], resourceName(a.namespace, a.name, qualify))
		}
		for _, k := range order {
			out = append(out, row(res, k, rows[k]))
		}
	}
	return out
}

func row(res verify.KyvernoTestResult, k rowKey, resources []string) verify.KyvernoTestResult {
	r := verify.KyvernoTestResult{Policy: k.successor.name, Kind: k.kind, Result: k.result, Operation: k.operation,
		Resources: resources, PatchedResources: res.PatchedResources, FailOnMissingResources: res.FailOnMissingResources}
	if k.successor.kind == "MutatingPolicy" {
		r.IsMutatingPolicy = true
	} else {
		r.IsValidatingPolicy = true
	}
	return r
}

// answer is what the successor of one resource of a result answers.
type answer struct {
	successor                    successorRef
	namespace, name, kind        string
	status                       string
	operation, rulelessOperation string
}

// answers are, per resource of result i (in order), the answer of each
// successor that stands for a policy of its family: a response's status
// (fail as error for an evaluation error, pass for a pattern's
// conditional-anchor skip and for a mutate rule's "no patches applied"
// skip), skip when only the generated
// match condition left it out, "" when no successor answers.
func answers(outcomes []verify.KyvernoOutcome, i int, successors map[string]successorRef) []answer {
	var out []answer
	index := map[string]int{}
	for _, o := range outcomes {
		if o.Result != i {
			continue
		}
		succ, ok := successors[o.Policy.Name]
		key := o.Resource.GetNamespace() + "/" + o.Resource.GetName() + "/" + o.Resource.GetKind() + "/" + succ.name
		j, seen := index[key]
		if !seen {
			j = len(out)
			index[key] = j
			out = append(out, answer{successor: succ, namespace: o.Resource.GetNamespace(), name: o.Resource.GetName(),
				kind: o.Resource.GetKind(), operation: string(o.Operation), rulelessOperation: string(o.RulelessOperation)})
		}
		if !ok {
			continue
		}
		switch {
		case o.Answer == verify.Responded && o.EvaluationError:
			out[j].status = "error"
		case o.Answer == verify.Responded && o.PatternSkip:
			out[j].status = "pass" // a ValidatingPolicy has no conditional-anchor skip
		case o.Answer == verify.Responded && o.NoPatches:
			out[j].status = "pass" // a MutatingPolicy that evaluates passes, patch or not
		case o.Answer == verify.Responded:
			out[j].status = o.Status
		case o.Answer == verify.Excluded && out[j].status == "":
			out[j].status = "skip"
		}
	}
	return dropUnanswered(out)
}

// dropUnanswered keeps, for each resource, its answers; a resource with
// none keeps one empty answer, to be counted as dropped.
func dropUnanswered(as []answer) []answer {
	answered := map[string]bool{}
	for _, a := range as {
		if a.status != "" {
			answered[a.namespace+"/"+a.name+"/"+a.kind] = true
		}
	}
	var out []answer
	counted := map[string]bool{}
	for _, a := range as {
		k := a.namespace + "/" + a.name + "/" + a.kind
		switch {
		case a.status != "":
			out = append(out, a)
		case !answered[k] && !counted[k]:
			counted[k] = true
			out = append(out, a)
		}
	}
	return out
}

// ambiguousNames are the resource names that more than one resource of the
// outcomes holds (in different namespaces): rows name those namespace/name.
func ambiguousNames(outcomes []verify.KyvernoOutcome) map[string]bool {
	namespaces := map[string]map[string]bool{}
	for _, o := range outcomes {
		n := o.Resource.GetName()
		if namespaces[n] == nil {
			namespaces[n] = map[string]bool{}
		}
		namespaces[n][o.Resource.GetNamespace()] = true
	}
	out := map[string]bool{}
	for n, nss := range namespaces {
		out[n] = len(nss) > 1
	}
	return out
}

func resourceName(namespace, name string, qualify map[string]bool) string {
	if qualify[name] && namespace != "" {
		return namespace + "/" + name
	}
	return name
}

// copyTestFiles copies the files the test names (resources, values,
// userinfo, parameter objects, patched resources, the context file, the
// cluster resources and global context entries' resource files) to the
// same relative place beside the migrated test.
func copyTestFiles(tp, outDir string, t *verify.KyvernoTestFile) ([]File, error) {
	names := append(append([]string{}, t.Resources...), t.ParamResources...)
	names = append(names, t.Variables, t.UserInfo, t.Context)
	names = append(names, t.ClusterResources...)
	names = append(names, globalContextFiles(t.GlobalContextEntries)...)
	for _, r := range t.Results {
		names = append(names, r.PatchedResources)
	}
	seen := map[string]bool{}
	var out []File
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		if !filepath.IsLocal(n) {
			return nil, fmt.Errorf("the test names %s, outside its directory; migrate copies only the files beside or below the test", n)
		}
		data, err := inputfile.ReadFile(filepath.Join(filepath.Dir(tp), n))
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: outDir + "/" + filepath.ToSlash(filepath.Clean(n)), Data: data})
	}
	return out, nil
}

// globalContextFiles are the resourceFiles global context entries name.
func globalContextFiles(entries []any) []string {
	var out []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		files, _ := m["resourceFiles"].([]any)
		for _, f := range files {
			if s, ok := f.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// testYAML renders a test without the empty metadata fields its Go type
// writes.
func testYAML(t *verify.KyvernoTestFile) ([]byte, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
