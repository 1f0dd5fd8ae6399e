package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/admitc/admitc/internal/inputfile"
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
	// Warning means the test's own tool passes the result, but for a
	// reason that is likely a mistake in the test (Reason says which: a
	// rule or a resource it names does not exist). It fails a strict run.
	Warning Outcome = "warning"
	// NoResponse means nothing answered for the result (no resource to
	// judge, or an expected patched resource missing), so the test's own
	// tool gives it no row and counts it neither passed nor failed. It
	// fails a strict run.
	NoResponse Outcome = "no-response"
)

// Result is one expected result of a test file and its outcome.
type Result struct {
	File     string  `json:"file"`
	Test     string  `json:"test,omitempty"`
	Case     string  `json:"case,omitempty"`
	Expected string  `json:"expected,omitempty"`
	Got      string  `json:"got,omitempty"`
	Outcome  Outcome `json:"outcome"`
	// Reason says why the outcome is unsupported, an error, a warning or
	// no response.
	Reason string `json:"reason,omitempty"`
}

// Summary counts results by outcome.
type Summary struct {
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Unsupported int `json:"unsupported"`
	Errors      int `json:"errors"`
	Warnings    int `json:"warnings"`
	NoResponse  int `json:"noResponse"`
}

// Report is every result of a run, in file order, and the run's notes.
type Report struct {
	Results []Result `json:"results"`
	Summary Summary  `json:"summary"`
	// Notes are remarks on the run: files found but not run, and the
	// compiler's notes on the policies of gator suites.
	Notes []string `json:"notes,omitempty"`
	// Strict says warnings and results without a response fail the run.
	Strict bool `json:"strict,omitempty"`
}

// Format is one test-file format.
type Format interface {
	// Name names the format ("gator").
	Name() string
	// Claims reports whether data, read from file, is a test file of this
	// format.
	Claims(file string, data []byte) bool
	// Run runs the test file and returns one result per expected result,
	// and notes on the run.
	Run(ctx context.Context, file string, data []byte) ([]Result, []string)
}

// DirectoryFilter is a Format whose own tool runs only some of the files
// it claims when it finds them in a directory (kyverno test reads only
// files named kyverno-test.yaml); a file named as a path is always run.
type DirectoryFilter interface {
	// SkipFound says why a claimed file found in a directory is not run,
	// or "".
	SkipFound(file string) string
}

// Formats are the test-file formats Run knows, in the order they are asked.
var Formats = []Format{Gator{}, Kyverno{}}

// Options are what a run reads besides its paths.
type Options struct {
	// Formats are asked in order; nil is Formats.
	Formats []Format
	// Strict makes warnings and results without a response fail the run.
	Strict bool
}

// Run finds test files under paths (directories recursively, their .yaml
// and .yml files in name order; a named file is always read) and runs each
// with the first format that claims it. An unreadable path or finding no
// test file at all is an error; a file found in a directory must be a
// regular file.
func Run(ctx context.Context, paths []string, opts Options) (*Report, error) {
	files, err := testFiles(paths)
	if err != nil {
		return nil, err
	}
	formats := opts.Formats
	if formats == nil {
		formats = Formats
	}
	rep := &Report{Results: []Result{}, Strict: opts.Strict}
	found := 0
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("read test file: %w", err)
		}
		format := claim(formats, f.path, data)
		if format == nil {
			continue
		}
		if why := skipFound(format, f); why != "" {
			rep.Notes = append(rep.Notes, "skipped "+f.path+": "+why)
			continue
		}
		found++
		results, notes := format.Run(ctx, f.path, data)
		rep.Results = append(rep.Results, results...)
		rep.Notes = appendNew(rep.Notes, notes...)
	}
	if found == 0 {
		return nil, fmt.Errorf("no test files under %s (gator suites: kind Suite, apiVersion %s; Kyverno tests: kind Test, apiVersion %s)%s", strings.Join(paths, ", "), SuiteAPIVersion, TestAPIVersion, skippedHint(rep.Notes))
	}
	rep.Summary = summarize(rep.Results)
	return rep, nil
}

func claim(formats []Format, file string, data []byte) Format {
	for _, format := range formats {
		if format.Claims(file, data) {
			return format
		}
	}
	return nil
}

func skipFound(format Format, f testFile) string {
	if d, ok := format.(DirectoryFilter); ok && !f.named {
		return d.SkipFound(f.path)
	}
	return ""
}

func skippedHint(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
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
		case Warning:
			s.Warnings++
		case NoResponse:
			s.NoResponse++
		}
	}
	return s
}

// testFile is a file to run; named says it was given as a path rather
// than found in a directory.
type testFile struct {
	path  string
	named bool
}

func testFiles(paths []string) ([]testFile, error) {
	var out []testFile
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("read test files: %w", err)
		}
		if !info.IsDir() {
			out = append(out, testFile{path: p, named: true})
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ext := strings.ToLower(filepath.Ext(path)); d.IsDir() || ext != ".yaml" && ext != ".yml" {
				return nil
			}
			if err := inputfile.CheckEntry(path, d); err != nil {
				return err
			}
			files = append(files, path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read test files: %w", err)
		}
		sort.Strings(files)
		for _, f := range files {
			out = append(out, testFile{path: f})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no paths given")
	}
	return out, nil
}
