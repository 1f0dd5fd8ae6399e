//go:build kyverno

package pattern

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/kyverno/kyverno/pkg/engine/validate"
	"github.com/stretchr/testify/require"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// kyvernoDecides is the validate handler's decision on pattern or
// anyPattern (validate_resource.go validatePatterns): outcome and path.
func kyvernoDecides(r rule, resource any) (outcome, path string) {
	defer func() {
		if p := recover(); p != nil {
			outcome, path = "panic", fmt.Sprint(p)
		}
	}()
	if r.anyPattern == nil {
		return matchPattern(resource, r.pattern)
	}
	var skipped, failed []string
	for i, p := range r.anyPattern {
		o, path := matchPattern(resource, p)
		switch o {
		case Pass:
			return Pass, ""
		case Skip:
			skipped = append(skipped, path)
		default:
			failed = append(failed, fmt.Sprintf("[%d]%s", i, path))
		}
	}
	if len(skipped) > 0 && len(failed) == 0 {
		return Skip, ""
	}
	if len(failed) > 0 {
		return Fail, strings.Join(failed, "\n")
	}
	return Pass, ""
}

// elemPath is the path Kyverno's error names, when it names one (the
// PatternError of an engine error has none).
func elemPath(err error) string {
	msg := err.Error()
	for _, marker := range []string{"Path: ", "at path "} {
		if i := strings.LastIndex(msg, marker); i >= 0 {
			return strings.TrimSuffix(strings.Fields(msg[i+len(marker):])[0], ".")
		}
	}
	return msg
}

func matchPattern(resource, pattern any) (string, string) {
	err := validate.MatchPattern(logr.Discard(), resource, deepCopy(pattern))
	if err == nil {
		return Pass, ""
	}
	pe, ok := err.(*validate.PatternError)
	switch {
	case !ok:
		return EngineError, err.Error()
	case pe.Skip:
		return Skip, ""
	case pe.Path == "":
		return EngineError, elemPath(err)
	}
	return Fail, pe.Path
}

// TestDifferentialAgainstKyverno compares, for every fixture rule, Kyverno's
// MatchPattern with the translation evaluated in admitc's CEL environment on
// every fixture resource and on generated variants of each.
func TestDifferentialAgainstKyverno(t *testing.T) {
	rules, resources := loadFixtures(t)
	perResource, seed := 60, int64(1000)
	if n, err := strconv.Atoi(os.Getenv("PATTERN_VARIANTS")); err == nil {
		perResource = n
	}
	if n, err := strconv.ParseInt(os.Getenv("PATTERN_SEED"), 10, 64); err == nil {
		seed = n
	}
	compared, disagreements, paths, random := 0, 0, 0, 0
	outcomes := map[string]int{}
	for ri, r := range rules {
		var e Expr
		var err error
		var patterns []any
		if r.anyPattern != nil {
			e, err = TranslateAny(r.anyPattern, "object")
			patterns = r.anyPattern
		} else {
			e, err = Translate(r.pattern, "object")
			patterns = []any{r.pattern}
		}
		require.NoError(t, err, r.name)
		eval := compileString(t, e.Result)
		gen := newVariantGen(seed+int64(ri), patterns...)
		for _, base := range resources {
			for _, res := range append([]any{base}, gen.variants(base, perResource)...) {
				compared++
				want, wantPath := kyvernoDecides(r, res)
				got, err := eval(res)
				gotOutcome, gotPath, _ := strings.Cut(got, " ")
				if err != nil {
					gotOutcome, gotPath = "cel-error", err.Error()
				}
				if ambiguousWildcard(patterns, res) {
					random++
					continue
				}
				outcomes[want]++
				if gotOutcome != want && !nondeterministic(r, res, gotOutcome, gotPath) {
					disagreements++
					if disagreements <= 25 {
						doc, _ := json.Marshal(res)
						t.Errorf("rule %s: kyverno %s %s, cel %s %s\nresource: %s", r.name, want, wantPath, gotOutcome, gotPath, doc)
					}
					continue
				}
				if (want == Fail || want == EngineError) && gotPath != wantPath && !nondeterministic(r, res, gotOutcome, gotPath) {
					paths++
					if paths <= 10 {
						doc, _ := json.Marshal(res)
						t.Errorf("rule %s: kyverno fails at %q, cel at %q\nresource: %s", r.name, wantPath, gotPath, doc)
					}
				}
			}
		}
	}
	keys := make([]string, 0, len(outcomes))
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary []string
	for _, k := range keys {
		summary = append(summary, fmt.Sprintf("%s=%d", k, outcomes[k]))
	}
	t.Logf("%d rules, %d resources, %d comparisons (%s), %d left out (Kyverno picks one of several keys matching a wildcard key at random), %d outcome disagreements, %d path disagreements",
		len(rules), len(resources), compared-random, strings.Join(summary, " "), random, disagreements, paths)
}

// ambiguousWildcard reports whether a wildcard key of a labels or
// annotations pattern matches more than one string-valued key of the
// resource: Kyverno then checks one of them at random (the translation
// checks all of them, a documented difference).
func ambiguousWildcard(patterns []any, res any) bool {
	for _, p := range patterns {
		if ambiguousIn(p, res, false) {
			return true
		}
	}
	return false
}

func ambiguousIn(p, res any, labels bool) bool {
	pm, ok := p.(map[string]any)
	rm, rok := res.(map[string]any)
	if !ok || !rok {
		return false
	}
	for raw, pv := range pm {
		key := parseKey(raw).key
		if labels && strings.ContainsAny(key, "*?") {
			n := 0
			for rk, rv := range rm {
				if _, isString := rv.(string); isString && wildcardMatchGo(key, rk) {
					n++
				}
			}
			if n > 1 {
				return true
			}
		}
		if ambiguousIn(pv, rm[key], key == "labels" || key == "annotations") {
			return true
		}
	}
	return false
}

// wildcardMatchGo is Kyverno's wildcard.Match.
func wildcardMatchGo(p, s string) bool {
	re := strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(p))
	return regexp.MustCompile("(?s)^" + re + "$").MatchString(s)
}

// nondeterministic reports whether Kyverno, run again, also answers
// outcome and path: it expands wildcard label keys with a random match.
func nondeterministic(r rule, res any, outcome, path string) bool {
	for i := 0; i < 16; i++ {
		o, p := kyvernoDecides(r, res)
		if o == outcome && (o != Fail || p == path) {
			return true
		}
	}
	return false
}
