package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// What admitc's engine makes of each expected result of a Kyverno test,
// for a translator that rewrites the test for other policies (admitc
// migrate): per result, resource and IR policy of the result's family,
// whether the policy answered and how.

// Answer is how one IR policy met one resource.
type Answer string

const (
	// NotMatched: the policy's matchConstraints do not match the resource.
	NotMatched Answer = "not-matched"
	// Excluded: the constraints match, the rule's generated match
	// condition (its match and exclude) does not.
	Excluded Answer = "excluded"
	// Responded: the policy gave a rule response (Status).
	Responded Answer = "responded"
)

// KyvernoOutcome is one IR policy's answer to one resource of one
// expected result.
type KyvernoOutcome struct {
	// Result is the index of the expected result in the test's results.
	Result   int
	Resource *unstructured.Unstructured
	// Operation is the admission operation the resource was judged under;
	// RulelessOperation the one a ruleless policy (a ValidatingPolicy) of
	// the same result would be judged under (values files set per-rule
	// operations for rule policies only).
	Operation, RulelessOperation ir.Operation
	Policy                       *ir.Policy
	Answer                       Answer
	// Status is pass, fail, skip or error when the policy responded.
	Status string
	// EvaluationError says a fail is a CEL evaluation error (a ruleless
	// policy reports it as error).
	EvaluationError bool
	// PatternSkip says a skip came from a pattern rule's conditional
	// anchor (a successor without rules passes instead).
	PatternSkip bool
	// NoPatches says a skip is a mutate rule's patch that changed nothing
	// (Kyverno's "no patches applied"); a MutatingPolicy, whose engine
	// reports pass whenever it evaluates, passes instead.
	NoPatches bool
}

// KyvernoTestFile is a Kyverno test file as written, for rewriting; only
// its policies, resources and results are interpreted.
type KyvernoTestFile = kyvernoTest

// KyvernoTestResult is one expected result of a KyvernoTestFile.
type KyvernoTestResult = testResult

// ReadKyvernoTest reads a Kyverno test file strictly.
func ReadKyvernoTest(file string) (*KyvernoTestFile, error) {
	data, err := inputfile.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var t kyvernoTest
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return nil, fmt.Errorf("malformed Kyverno test %s: %w", file, err)
	}
	return &t, nil
}

// KyvernoOutcomes runs the test file's policies on the resources of its
// results and says, per result, resource and IR policy of the result's
// family, what the engine answered.
func KyvernoOutcomes(ctx context.Context, file string) ([]KyvernoOutcome, error) {
	t, err := ReadKyvernoTest(file)
	if err != nil {
		return nil, err
	}
	if why := unsupportedTest(t); why != "" {
		return nil, fmt.Errorf("%s: %s", file, why)
	}
	s, err := loadSuite(filepath.Dir(file), t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []KyvernoOutcome
	for i, res := range t.Results {
		name := res.Policy[strings.LastIndex(res.Policy, "/")+1:]
		family, _ := s.family(name, res.Rule)
		if len(family) == 0 {
			continue
		}
		objs, _ := s.selectResources(res.Resources)
		for _, o := range objs {
			op := s.operation(res, family[0].From.Name, o, family[0].From.Rule != "")
			run, err := s.run(ctx, o, op)
			if err != nil {
				return nil, err
			}
			ruleless := s.operation(res, family[0].From.Name, o, false)
			for _, p := range family {
				out = append(out, s.outcome(run, p, KyvernoOutcome{Result: i, Resource: o, Operation: op, RulelessOperation: ruleless, Policy: p}))
			}
		}
	}
	return out, nil
}

// outcome fills in how p answered in run.
func (s *kyvernoSuite) outcome(run *evaluationRun, p *ir.Policy, out KyvernoOutcome) KyvernoOutcome {
	rr, matched := s.response(run, p)
	if matched {
		out.Answer, out.Status = Responded, rr.status
		out.EvaluationError = rr.status == statusFail && evaluationError(run, p)
		out.PatternSkip = rr.patternSkip
		out.NoPatches = rr.noPatches
		return out
	}
	out.Answer = NotMatched
	result := run.validated
	if p.Kind == ir.Mutating {
		result = run.mutated
	}
	if result != nil {
		if o, _ := lastTrace(result, p.Name); o == runtime.SkippedByConditions {
			out.Answer = Excluded
		}
	}
	return out
}

// evaluationError reports whether p's first violation in run is a CEL
// evaluation error.
func evaluationError(run *evaluationRun, p *ir.Policy) bool {
	for _, r := range []*runtime.Result{run.validated, run.mutatedValidated} {
		if r == nil {
			continue
		}
		for _, v := range r.Violations {
			if v.Policy == p.Name {
				return v.Error
			}
		}
	}
	return false
}
