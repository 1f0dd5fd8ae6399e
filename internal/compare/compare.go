// Package compare judges manifests with several admission engines and
// reports every disagreement: admitc's runtime, the API server's own
// admission policy plugins run in-process on the generated policies, and
// (in builds with the kyverno tag) the Kyverno engine.
package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/runtime"
)

// Verdict is an engine's answer to one manifest.
type Verdict string

const (
	// Allowed means admitted without warnings.
	Allowed Verdict = "allowed"
	// Warned means admitted with warnings.
	Warned Verdict = "warned"
	// Denied means refused.
	Denied Verdict = "denied"
)

// Result is one engine's decision for one manifest.
type Result struct {
	Engine   string   `json:"engine"`
	Verdict  Verdict  `json:"verdict"`
	Messages []string `json:"messages,omitempty"`
	// Mutated is true when the engine changed the object.
	Mutated bool                       `json:"mutated"`
	Object  *unstructured.Unstructured `json:"-"`
}

// Engine decides manifests.
type Engine interface {
	Name() string
	Admit(ctx context.Context, obj *unstructured.Unstructured, namespace string) (Result, error)
}

// ExpectedDifference is an inherent, explained difference between engines:
// shown in every report, never hidden. The list grows only with a test that
// shows the cause.
type ExpectedDifference struct {
	Engine string `json:"engine"`
	Reason string `json:"reason"`
	// Explains reports whether the difference accounts for how result r
	// differs from the reference result ref.
	Explains func(ref, r Result) bool `json:"-"`
}

// ExpectedDifferences are the known inherent differences. Each is shown on
// every row it explains; README.md lists them, and
// TestKyvernoPatternMessage shows the cause of the Kyverno one.
var ExpectedDifferences = []ExpectedDifference{
	{
		Engine: "kyverno",
		Reason: "a Kyverno pattern rule reports its static message (\"validation error: MESSAGE. rule NAME failed at path PATH\"), not admitc's message naming each missing field; both deny",
		Explains: func(ref, r Result) bool {
			if r.Engine != "kyverno" || ref.Verdict != Denied || r.Verdict != Denied {
				return false
			}
			for _, m := range r.Messages {
				if strings.Contains(m, "validation error: ") && strings.Contains(m, " failed at path ") {
					return true
				}
			}
			return false
		},
	},
	{
		Engine: "kyverno",
		Reason: "a rule whose {{ }} variable does not resolve is an error in both: Kyverno denies with its substitution error, admitc with the CEL evaluation error of the expression that reads the variable",
		Explains: func(ref, r Result) bool {
			if r.Engine != "kyverno" || ref.Verdict != Denied || r.Verdict != Denied {
				return false
			}
			substitution := slices.ContainsFunc(r.Messages, func(m string) bool { return strings.Contains(m, "variable substitution failed") })
			evaluation := slices.ContainsFunc(ref.Messages, func(m string) bool { return strings.Contains(m, " resulted in error: ") })
			return substitution && evaluation
		},
	},
}

// Row is every engine's decision for one manifest.
type Row struct {
	Source      string   `json:"source"`
	Kind        string   `json:"kind"`
	Name        string   `json:"name"`
	Results     []Result `json:"results"`
	Agree       bool     `json:"agree"`
	Differences []string `json:"differences,omitempty"`
	Expected    []string `json:"expected,omitempty"`
}

// Run decides every manifest with every engine and compares each engine
// with the first (admitc's runtime).
func Run(ctx context.Context, engines []Engine, manifests []runtime.Manifest, namespace string) ([]Row, error) {
	var rows []Row
	for _, m := range manifests {
		row := Row{Source: m.Source, Kind: m.Object.GetKind(), Name: m.Object.GetName()}
		for _, e := range engines {
			r, err := e.Admit(ctx, m.Object.DeepCopy(), namespace)
			if err != nil {
				return nil, fmt.Errorf("%s: engine %s: %w", m.Source, e.Name(), err)
			}
			row.Results = append(row.Results, r)
		}
		row.Differences, row.Expected = differences(row.Results)
		row.Agree = len(row.Differences) == 0
		rows = append(rows, row)
	}
	return rows, nil
}

// differences compares every result with the first: the verdict, whether a
// denial carries one of the reference's messages (the API server reports
// only the first denial), and the mutated object. A difference an expected
// difference explains is returned apart, with its reason.
func differences(results []Result) (diffs, expected []string) {
	ref := results[0]
	for _, r := range results[1:] {
		if r.Verdict != ref.Verdict {
			diffs = append(diffs, fmt.Sprintf("%s says %s, %s says %s", ref.Engine, ref.Verdict, r.Engine, r.Verdict))
			continue
		}
		if r.Verdict == Denied && !sharesMessage(ref.Messages, r.Messages) {
			if why := explained(ref, r); why != "" {
				expected = append(expected, why)
			} else {
				diffs = append(diffs, fmt.Sprintf("%s denies with %q, %s with %q", r.Engine, r.Messages, ref.Engine, ref.Messages))
			}
		}
		refObject := ref.Object
		if r.Engine == "apiserver" && refObject != nil {
			refObject = stripServerFields(refObject)
		}
		if refObject != nil && r.Object != nil && r.Verdict != Denied && !sameObject(refObject, r.Object) {
			diffs = append(diffs, fmt.Sprintf("%s and %s mutate the object differently", ref.Engine, r.Engine))
		}
	}
	return diffs, expected
}

func explained(ref, r Result) string {
	for _, d := range ExpectedDifferences {
		if d.Explains(ref, r) {
			return d.Engine + ": " + d.Reason
		}
	}
	return ""
}

// Agree reports whether two engines' results for one manifest agree.
func Agree(a, b Result) bool {
	diffs, _ := differences([]Result{a, b})
	return len(diffs) == 0
}

// sharesMessage reports whether one of got's messages contains one of
// want's (each stripped of its "[policy] " label), or is the error one of
// want's raised: a translated rule that errs as Kyverno's does raises
// Kyverno's error as a key no map has, which the API server reports as
// "expression '...' resulted in error: no such key: ERROR".
func sharesMessage(want, got []string) bool {
	for _, w := range want {
		w = unlabeled(w)
		_, raised, errs := strings.Cut(w, raisedError)
		w = podSecurityChecksSorted(w)
		for _, g := range got {
			if strings.Contains(podSecurityChecksSorted(g), w) || errs && unlabeled(g) == raised {
				return true
			}
		}
	}
	return false
}

// raisedError precedes the error an expression raised by indexing a map
// with it.
const raisedError = "resulted in error: no such key: "

// unlabeled is a message without its "[policy] " label.
func unlabeled(m string) string {
	if i := strings.Index(m, "] "); strings.HasPrefix(m, "[") && i > 0 {
		return m[i+2:]
	}
	return m
}

// podSecurityChecksSorted is m with the failing checks of a Kyverno
// podSecurity message ("It violates PodSecurity "L:V": (Forbidden
// reason: ...)(Forbidden reason: ...)") in sorted order: Kyverno lists
// them in Go's map order when the rule excludes controls
// (pss.exemptExclusions), so any order is Kyverno's.
func podSecurityChecksSorted(m string) string {
	const lead, sep = "It violates PodSecurity \"", ")(Forbidden reason: "
	i := strings.Index(m, lead)
	if i < 0 {
		return m
	}
	j := strings.Index(m[i+len(lead):], "\": (Forbidden reason: ")
	if j < 0 {
		return m
	}
	start := i + len(lead) + j + len("\": (Forbidden reason: ")
	end := strings.LastIndex(m, "])")
	if end < start {
		return m
	}
	checks := strings.Split(m[start:end+1], sep)
	sort.Strings(checks)
	return m[:start] + strings.Join(checks, sep) + m[end+1:]
}

func sameObject(a, b *unstructured.Unstructured) bool {
	na, _ := normalise(a)
	nb, _ := normalise(b)
	return reflect.DeepEqual(na, nb)
}

func normalise(u *unstructured.Unstructured) (any, error) {
	n, err := JSONObject(u)
	if err != nil {
		return nil, err
	}
	return n.Object, nil
}

// JSONObject is u through encoding/json, as Kyverno reads objects (its
// webhook from the admission request's JSON, its CLI from YAML through
// JSON): every number a float64, which JMESPath's <, <=, >, >= need (they
// compare an int64 as null).
func JSONObject(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// AllAgree reports whether every row agrees.
func AllAgree(rows []Row) bool {
	for _, r := range rows {
		if !r.Agree {
			return false
		}
	}
	return true
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
