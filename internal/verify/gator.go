package verify

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/gatekeeper"
	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// SuiteAPIVersion is the apiVersion of gator suites.
const SuiteAPIVersion = "test.gatekeeper.sh/v1alpha1"

// Gator runs Gatekeeper's gator suites as `gator verify` does (pkg/gator/verify):
// each test's template and constraint, each case's object judged by that
// constraint, each assertion a count of violations (optionally those whose
// message matches a Go regexp). Suites are YAML 1.2, so yes and no are
// strings.
type Gator struct{}

var _ Format = Gator{}

// Name implements Format.
func (Gator) Name() string { return "gator" }

type suite struct {
	Kind       string `yaml:"kind"`
	APIVersion string `yaml:"apiVersion"`
	Metadata   any    `yaml:"metadata"`
	Tests      []test `yaml:"tests"`
	Skip       bool   `yaml:"skip"`
}

type test struct {
	Name       string   `yaml:"name"`
	Template   string   `yaml:"template"`
	Constraint string   `yaml:"constraint"`
	Cases      []*tcase `yaml:"cases"`
	Invalid    bool     `yaml:"invalid"`
	Skip       bool     `yaml:"skip"`
}

type tcase struct {
	Name       string      `yaml:"name"`
	Object     string      `yaml:"object"`
	Inventory  []string    `yaml:"inventory"`
	Assertions []assertion `yaml:"assertions"`
	Skip       bool        `yaml:"skip"`
}

type assertion struct {
	// Violations is "yes" (the default), "no" or a non-negative integer.
	Violations any     `yaml:"violations"`
	Message    *string `yaml:"message"`
}

// Claims implements Format: a YAML file whose kind is Suite and apiVersion
// test.gatekeeper.sh/v1alpha1.
func (Gator) Claims(_ string, data []byte) bool {
	var head struct {
		Kind       string `yaml:"kind"`
		APIVersion string `yaml:"apiVersion"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return bytes.Contains(data, []byte(SuiteAPIVersion))
	}
	return head.Kind == "Suite" && head.APIVersion == SuiteAPIVersion
}

// Run implements Format; its notes are the compiler's notes on the
// suite's templates and constraints.
func (g Gator) Run(ctx context.Context, file string, data []byte) ([]Result, []string) {
	var s suite
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return []Result{{File: file, Outcome: Error, Reason: "malformed suite: " + err.Error()}}, nil
	}
	if s.Skip {
		return nil, nil
	}
	var out []Result
	var notes []string
	for _, t := range s.Tests {
		if !t.Skip {
			results, n := g.runTest(ctx, file, t)
			out = append(out, results...)
			notes = appendNew(notes, n...)
		}
	}
	return out, notes
}

// runTest compiles the test's template and constraint and runs its cases.
func (g Gator) runTest(ctx context.Context, file string, t test) ([]Result, []string) {
	dir := filepath.Dir(file)
	base := Result{File: file, Test: t.Name}
	if t.Invalid {
		base.Expected = "constraint is invalid"
		return []Result{withOutcome(base, Unsupported, "admitc does not check constraints against their template's parameter schema")}, nil
	}
	if t.Template == "" || t.Constraint == "" {
		return []Result{withOutcome(base, Error, "malformed suite: a test needs template and constraint")}, nil
	}
	engine, notes, outcome, reason := compileTest(filepath.Join(dir, t.Template), filepath.Join(dir, t.Constraint))
	var out []Result
	for _, c := range t.Cases {
		if c.Skip {
			continue
		}
		r := base
		r.Case = c.Name
		if engine == nil {
			for _, a := range c.Assertions {
				r.Expected = a.String()
				out = append(out, withOutcome(r, outcome, reason))
			}
			if len(c.Assertions) == 0 {
				out = append(out, withOutcome(r, outcome, reason))
			}
			continue
		}
		out = append(out, runCase(ctx, engine, dir, r, c)...)
	}
	return out, notes
}

// compileTest compiles a template and its constraint (each a regular
// file) into an engine, with the compiler's notes; else it says why not:
// unsupported for a Rego-only template, error otherwise.
func compileTest(template, constraint string) (*runtime.Engine, []string, Outcome, string) {
	for _, f := range []string{template, constraint} {
		if err := inputfile.Check(f); err != nil {
			return nil, nil, Error, err.Error()
		}
	}
	sources, err := compiler.ReadSources([]string{template, constraint})
	if err != nil {
		return nil, nil, Error, err.Error()
	}
	set, diags := compiler.Compile(sources, compiler.Options{})
	if len(diags) > 0 {
		var msgs, rego []string
		for _, d := range diags {
			msgs = append(msgs, d.String())
			if strings.HasPrefix(d.Message, gatekeeper.RegoOnly) {
				rego = append(rego, d.String())
			}
		}
		if len(rego) > 0 {
			return nil, nil, Unsupported, strings.Join(rego, "; ")
		}
		return nil, nil, Error, strings.Join(msgs, "; ")
	}
	engine, err := runtime.NewEngine(set)
	if err != nil {
		return nil, nil, Error, err.Error()
	}
	return engine, policyNotes(set), "", ""
}

// policyNotes renders the compiler's notes on the set's policies:
// FILE:LINE:COL: policy "NAME" TEXT.
func policyNotes(set *ir.PolicySet) []string {
	var out []string
	for _, p := range set.Policies {
		for _, n := range p.Notes {
			out = append(out, fmt.Sprintf("%s:%d:%d: policy %q %s", p.Origin.File, p.Origin.Line, p.Origin.Column, p.Name, n))
		}
	}
	return out
}

func withOutcome(r Result, o Outcome, reason string) Result {
	r.Outcome, r.Reason = o, reason
	return r
}

// String renders the assertion as written in the suite.
func (a assertion) String() string {
	s := "violations: " + a.want()
	if a.Message != nil {
		s += fmt.Sprintf(", message: %q", *a.Message)
	}
	return s
}

func (a assertion) want() string {
	if a.Violations == nil {
		return "yes"
	}
	return fmt.Sprint(a.Violations)
}
