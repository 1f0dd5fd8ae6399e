package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Outcome is what became of one expected result.
type Outcome string

const (
	// Passed means the expected result held.
	Passed Outcome = "passed"
	// Failed means it did not.
	Failed Outcome = "failed"
	// Unsupported means admitc cannot judge it (Reason says why).
	Unsupported Outcome = "unsupported"
	// Error means the test could not run: a file is unreadable or malformed.
	Error Outcome = "error"
)

// Result is one expected result of a test file and its outcome.
type Result struct {
	File     string  `json:"file"`
	Test     string  `json:"test,omitempty"`
	Case     string  `json:"case,omitempty"`
	Expected string  `json:"expected,omitempty"`
	Got      string  `json:"got,omitempty"`
	Outcome  Outcome `json:"outcome"`
	// Reason says why the outcome is unsupported or an error.
	Reason string `json:"reason,omitempty"`
}

// Summary counts results by outcome.
type Summary struct {
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Unsupported int `json:"unsupported"`
	Errors      int `json:"errors"`
}

// Report is every result of a run, in file order.
type Report struct {
	Results []Result `json:"results"`
	Summary Summary  `json:"summary"`
}

// Format is one test-file format.
type Format interface {
	// Name names the format ("gator").
	Name() string
	// Claims reports whether data, read from file, is a test file of this
	// format.
	Claims(file string, data []byte) bool
	// Run runs the test file and returns one result per expected result.
	Run(ctx context.Context, file string, data []byte) []Result
}

// Formats are the test-file formats Run knows, in the order they are asked.
var Formats = []Format{Gator{}, Kyverno{}}

// Run finds test files under paths (directories recursively, their .yaml
// and .yml files in name order; a named file is always read) and runs each
// with the first format that claims it. An unreadable path or finding no
// test file at all is an error.
func Run(ctx context.Context, paths []string, formats []Format) (*Report, error) {
	files, err := testFiles(paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{Results: []Result{}}
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read test file: %w", err)
		}
		for _, format := range formats {
			if format.Claims(f, data) {
				found++
				rep.Results = append(rep.Results, format.Run(ctx, f, data)...)
				break
			}
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("no test files under %s (gator suites: kind Suite, apiVersion %s; Kyverno tests: kind Test, apiVersion %s)", strings.Join(paths, ", "), SuiteAPIVersion, TestAPIVersion)
	}
	rep.Summary = summarize(rep.Results)
	return rep, nil
}

func summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		switch r.Outcome {
		case Passed:
			s.Passed++
		case Failed:
			s.Failed++
		case Unsupported:
			s.Unsupported++
		case Error:
			s.Errors++
		}
	}
	return s
}

func testFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read test files: %w", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ext := strings.ToLower(filepath.Ext(path)); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read test files: %w", err)
		}
		sort.Strings(files)
		out = append(out, files...)
	}
	if len(out) == 0 {
		return nil, errors.New("no paths given")
	}
	return out, nil
}
