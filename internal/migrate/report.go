package migrate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/admitc/admitc/ir"
)

// Status is what became of one source rule.
type Status string

const (
	// Translated: the successor decides as the rule does.
	Translated Status = "translated"
	// TranslatedWithDifference: translated, but something the rule did is
	// not kept (Differences say what).
	TranslatedWithDifference Status = "translated-with-difference"
	// Refused: no successor (Reason says why).
	Refused Status = "refused"
)

// Report is what a run did, per input file, per input policy and rule,
// and per test.
type Report struct {
	// Filters are the Kyverno installation's filters the admission
	// policies leave out (nil: none were applied).
	Filters *FiltersReport `json:"filters,omitempty"`
	// Namespaces are the namespaces every written policy is scoped to.
	Namespaces []string       `json:"namespaces,omitempty"`
	Files      []FileReport   `json:"files"`
	Policies   []PolicyReport `json:"policies"`
	Tests      []TestReport   `json:"tests,omitempty"`
	Summary    Summary        `json:"summary"`
}

// FiltersReport says which of a Kyverno installation's filters the
// admission policies written for the API server apply.
type FiltersReport struct {
	Source  string   `json:"source"`
	Filters []string `json:"filters"`
}

// Summary counts rules and files by status.
type Summary struct {
	Translated               int `json:"translated"`
	TranslatedWithDifference int `json:"translatedWithDifference"`
	Refused                  int `json:"refused"`
	FilesMigrated            int `json:"filesMigrated"`
	FilesSkipped             int `json:"filesSkipped"`
	FilesRefused             int `json:"filesRefused"`
}

// FileStatus is what became of one input file.
type FileStatus string

const (
	// FileMigrated: the file compiled; its policies are reported.
	FileMigrated FileStatus = "migrated"
	// FileSkipped: a file of a directory without a Kyverno policy or an
	// admission policy (a resource, artifacthub-pkg.yml).
	FileSkipped FileStatus = "skipped"
	// FileRefused: the file cannot be read, or does not compile (a kind
	// admitc does not read, a CEL error); Reason says why.
	FileRefused FileStatus = "refused"
)

// FileReport is one JSON or YAML file of the input.
type FileReport struct {
	File   string     `json:"file"`
	Status FileStatus `json:"status"`
	Reason string     `json:"reason,omitempty"`
}

// PolicyReport is one input policy: where it was read, where its output
// went, and each rule.
type PolicyReport struct {
	File      string       `json:"file"`
	Kind      string       `json:"kind"`
	Namespace string       `json:"namespace,omitempty"`
	Name      string       `json:"name"`
	Dir       string       `json:"dir"`
	Files     []string     `json:"files,omitempty"`
	Rules     []RuleReport `json:"rules"`
	// NativeRefused says, per policy, why no admission policy was written
	// for it in the native file (its CEL cannot be written for the API
	// server).
	NativeRefused []string `json:"nativeRefused,omitempty"`
}

// RuleReport is one source rule (or a ruleless policy).
type RuleReport struct {
	Rule   string `json:"rule,omitempty"`
	Status Status `json:"status"`
	// Successors name the policies written for the rule to SuccessorFile
	// (validatingpolicy.yaml, mutatingpolicy.yaml, ...).
	Successors    []string `json:"successors,omitempty"`
	SuccessorFile string   `json:"successorFile,omitempty"`
	// AdmissionPolicies name the ValidatingAdmissionPolicies or
	// MutatingAdmissionPolicies (and their bindings) written for the rule
	// to AdmissionPolicyFile (vap.yaml or map.yaml): POLICY.RULE, not the
	// successors' names.
	AdmissionPolicies   []string `json:"admissionPolicies,omitempty"`
	AdmissionPolicyFile string   `json:"admissionPolicyFile,omitempty"`
	Reason              string   `json:"reason,omitempty"`
	Differences         []string `json:"differences,omitempty"`
	Notes               []string `json:"notes,omitempty"`
}

// TestReport is one Kyverno test file rewritten for the successors.
type TestReport struct {
	Source  string `json:"source"`
	Output  string `json:"output,omitempty"`
	Results int    `json:"results"`
	// Changed counts expected results whose answer changes with the kind
	// (excluded becomes skip; an evaluation error becomes error).
	Changed int `json:"changed,omitempty"`
	// Dropped counts resources left out: a refused rule's, or one that no
	// successor matches; DroppedResources say which and why.
	Dropped          int      `json:"dropped,omitempty"`
	DroppedResources []string `json:"droppedResources,omitempty"`
	Skipped          string   `json:"skipped,omitempty"`
}

// Passed reports whether every rule was translated without a difference
// and no file was refused.
func (r *Report) Passed() bool {
	return r.Summary.Refused == 0 && r.Summary.TranslatedWithDifference == 0 && r.Summary.FilesRefused == 0
}

func (r *Report) count() {
	r.Summary = Summary{}
	for _, f := range r.Files {
		switch f.Status {
		case FileMigrated:
			r.Summary.FilesMigrated++
		case FileSkipped:
			r.Summary.FilesSkipped++
		case FileRefused:
			r.Summary.FilesRefused++
		}
	}
	for _, p := range r.Policies {
		for _, rule := range p.Rules {
			switch rule.Status {
			case Translated:
				r.Summary.Translated++
			case TranslatedWithDifference:
				r.Summary.TranslatedWithDifference++
			case Refused:
				r.Summary.Refused++
			}
		}
	}
}

// buildReport reports each rule of the source: translated (with the
// importer's notes as differences) or refused, by the importer or by the
// successor format.
func (s *source) buildReport() *PolicyReport {
	r := &PolicyReport{File: s.file, Kind: s.ref.Kind, Namespace: s.ref.Namespace, Name: s.ref.Name, Dir: dirName(s.ref), Rules: []RuleReport{}}
	seen := map[string]bool{}
	for _, t := range s.translations {
		rr := RuleReport{Rule: t.From.Rule, Status: Translated, Notes: t.Notes}
		seen[t.From.Rule] = true
		if t.Refusal != "" {
			rr.Status, rr.Reason = Refused, t.Refusal
		}
		for _, succ := range t.Successors {
			rr.Successors = append(rr.Successors, succ.Name)
			rr.SuccessorFile = SuccessorFile(succ.Kind)
			for _, p := range succ.Covers {
				rr.Differences = appendNew(rr.Differences, p.Notes...)
			}
		}
		if len(rr.Differences) > 0 {
			rr.Status = TranslatedWithDifference
		}
		r.Rules = append(r.Rules, rr)
	}
	for _, sk := range s.skipped {
		rule := sk.From.Rule
		if sk.From.AutogenOf != "" && rule != "" {
			rule = sk.From.AutogenOf
		}
		if seen[rule] {
			continue
		}
		seen[rule] = true
		r.Rules = append(r.Rules, RuleReport{Rule: rule, Status: Refused,
			Reason: fmt.Sprintf("%s:%d:%d: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Feature, sk.Reason)})
	}
	return r
}

// admissionPolicy records that the admission policy named name, written
// to file, stands for p (its rule: the rule autogen copied for an autogen
// rule).
func (r *PolicyReport) admissionPolicy(p *ir.Policy, file, name string) {
	rule := ""
	if p.From != nil {
		rule = p.From.Rule
		if rule != "" && p.From.AutogenOf != "" {
			rule = p.From.AutogenOf
		}
	}
	for i := range r.Rules {
		if r.Rules[i].Rule == rule {
			r.Rules[i].AdmissionPolicies = append(r.Rules[i].AdmissionPolicies, name)
			r.Rules[i].AdmissionPolicyFile = file
			return
		}
	}
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, l := range list {
			found = found || l == it
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a reader: each file not migrated and
// why, per policy one line per rule, then its differences and notes
// indented, then the tests and two summary lines, of rules and of files.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if f := r.Filters; f != nil {
		fmt.Fprintf(&b, "vap.yaml and map.yaml leave out what Kyverno's filters leave out (%s; --kyverno-filters):\n", f.Source)
		for _, line := range f.Filters {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	} else {
		fmt.Fprintf(&b, "vap.yaml and map.yaml apply no Kyverno filters (--kyverno-filters none)\n")
	}
	if len(r.Namespaces) > 0 {
		fmt.Fprintf(&b, "every policy is scoped to namespace(s) %s (--namespace)\n", strings.Join(r.Namespaces, ", "))
	}
	for _, f := range r.Files {
		switch f.Status {
		case FileRefused:
			fmt.Fprintf(&b, "REFUSED file %s: %s\n", f.File, f.Reason)
		case FileSkipped:
			fmt.Fprintf(&b, "skipped file %s: %s\n", f.File, f.Reason)
		}
	}
	for _, p := range r.Policies {
		fmt.Fprintf(&b, "%s (%s) -> %s/\n", describe(ir.PolicyRef{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name}), p.File, p.Dir)
		for _, rule := range p.Rules {
			name := rule.Rule
			if name == "" {
				name = "(policy)"
			}
			switch rule.Status {
			case Refused:
				fmt.Fprintf(&b, "  %-9s %s: %s\n", "REFUSED", name, rule.Reason)
				if written := rule.written(); written != "" {
					fmt.Fprintf(&b, "            %s\n", written)
				}
			case TranslatedWithDifference:
				fmt.Fprintf(&b, "  %-9s %s -> %s\n", "DIFFERS", name, rule.written())
			default:
				fmt.Fprintf(&b, "  %-9s %s -> %s\n", "OK", name, rule.written())
			}
			for _, d := range rule.Differences {
				fmt.Fprintf(&b, "            difference: %s\n", d)
			}
			for _, n := range rule.Notes {
				fmt.Fprintf(&b, "            note: %s\n", n)
			}
		}
		for _, n := range p.NativeRefused {
			fmt.Fprintf(&b, "  no admission policy: %s\n", n)
		}
	}
	for _, t := range r.Tests {
		if t.Skipped != "" {
			fmt.Fprintf(&b, "test %s: not migrated: %s\n", t.Source, t.Skipped)
			for _, d := range t.DroppedResources {
				fmt.Fprintf(&b, "  dropped: %s\n", d)
			}
			continue
		}
		fmt.Fprintf(&b, "test %s -> %s (%d results, %d changed for the successor kind, %d resources dropped)\n", t.Source, t.Output, t.Results, t.Changed, t.Dropped)
		for _, d := range t.DroppedResources {
			fmt.Fprintf(&b, "  dropped: %s\n", d)
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "%d rules: %d translated, %d translated with a difference, %d refused\n", s.Translated+s.TranslatedWithDifference+s.Refused, s.Translated, s.TranslatedWithDifference, s.Refused)
	fmt.Fprintf(&b, "%d files: %d migrated, %d skipped (no policy), %d refused\n", s.FilesMigrated+s.FilesSkipped+s.FilesRefused, s.FilesMigrated, s.FilesSkipped, s.FilesRefused)
	_, err := io.WriteString(w, b.String())
	return err
}

// written names what was written for the rule, file by file:
// "validatingpolicy.yaml: A, B; vap.yaml: P.X, P.Y", or
// "validatingpolicy.yaml, vap.yaml: A" when both files hold the same names.
func (r RuleReport) written() string {
	succ, native := strings.Join(r.Successors, ", "), strings.Join(r.AdmissionPolicies, ", ")
	switch {
	case succ != "" && succ == native:
		return r.SuccessorFile + ", " + r.AdmissionPolicyFile + ": " + succ
	case succ != "" && native != "":
		return r.SuccessorFile + ": " + succ + "; " + r.AdmissionPolicyFile + ": " + native
	case succ != "":
		return r.SuccessorFile + ": " + succ
	case native != "":
		return r.AdmissionPolicyFile + ": " + native
	}
	return ""
}
