package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// Rule outcomes as Kyverno reports them.
const (
	statusPass  = "pass"
	statusFail  = "fail"
	statusSkip  = "skip"
	statusError = "error"
)

// ruleResponse is one rule response of Kyverno's engine for a resource.
type ruleResponse struct {
	policy *ir.Policy
	status string
	// message is the violation or the reason, for the report.
	message string
	// patternSkip says a pattern rule's conditional anchor skipped: a
	// ClusterPolicy rule's own outcome, which a successor without rules
	// (ValidatingPolicy) reports as pass.
	patternSkip bool
	// noPatches says a mutate rule's skip came from a patch that changed
	// nothing (a MutatingPolicy reports pass instead).
	noPatches bool
}

// judge checks one expected result against every resource it names, one
// Result per resource and rule response, as Kyverno's printTestResult; a
// resource name that names nothing is a warning row (in a test with
// resources), and a result with no resource to judge a row without
// response.
func (s *kyvernoSuite) judge(ctx context.Context, base Result, res testResult, sel Selector) []Result {
	name := res.Policy[strings.LastIndex(res.Policy, "/")+1:]
	family, skipped := s.family(name, res.Rule)
	names := sel.resourceNames(res.Resources)
	objs, missing := s.selectResources(names)
	objs = sel.narrow(objs)
	var out []Result
	if len(s.resources) > 0 {
		out = missingResources(base, missing, len(missing) < len(names))
	}
	if len(objs) == 0 {
		r := withCase(base, res)
		return append(out, withOutcome(r, NoResponse, "no resource to judge: "+s.noResourceReason()))
	}
	for _, o := range objs {
		r := base
		r.Case = describeResource(o)
		switch {
		case len(skipped) > 0:
			out = append(out, withOutcome(r, Unsupported, skippedReason(skipped)))
		case paramsUnsupported(family) != "":
			out = append(out, withOutcome(r, Unsupported, paramsUnsupported(family)))
		case len(family) == 0 && res.Rule != "" && s.hasPolicy(name):
			out = append(out, withOutcome(r, Warning, fmt.Sprintf("policy %s has no rule %s: kyverno test passes the result as excluded", name, res.Rule)))
		case len(family) == 0:
			r.Got = "policy " + name + " is not among the test's policies"
			out = append(out, withOutcome(r, Failed, ""))
		default:
			out = append(out, s.duplicateWarnings(s.judgeResource(ctx, r, res, family, o), o)...)
		}
	}
	return out
}

// duplicateWarnings turns the passed results of a resource that other
// resources of the test duplicate into warnings: kyverno test judges the
// first only, and so does admitc, but a test that expects something of
// the others checks nothing.
func (s *kyvernoSuite) duplicateWarnings(rs []Result, o *unstructured.Unstructured) []Result {
	where := s.ignored[duplicateKey(o)]
	if len(where) == 0 {
		return rs
	}
	for i := range rs {
		if rs[i].Outcome == Passed {
			rs[i] = withOutcome(rs[i], Warning, fmt.Sprintf("%s is also defined in %s, which is not judged: kyverno test judges only the first resource of a kind, namespace and name (it warns \"found duplicated resource\"); rename the others to have them judged",
				describeResource(o), strings.Join(where, ", ")))
		}
	}
	return rs
}

// missingResources are the warning rows of the names a result lists that
// name no resource of the test; some says others do.
func missingResources(base Result, missing []string, some bool) []Result {
	var out []Result
	for _, m := range missing {
		r := base
		r.Case = m
		why := "kyverno test ignores the name and judges the result on every resource of the test"
		if some {
			why = "kyverno test ignores the name"
		}
		out = append(out, withOutcome(r, Warning, "resource "+m+" is not among the test's resources: "+why))
	}
	return out
}

func (s *kyvernoSuite) noResourceReason() string {
	if len(s.resources) == 0 {
		return "the test has no resources, so kyverno test gives the result no row (counted neither passed nor failed)"
	}
	return "--test-case-selector's resource matches none of the result's resources"
}

// hasPolicy says whether a policy of the test is named name.
func (s *kyvernoSuite) hasPolicy(name string) bool {
	for _, p := range s.set.Policies {
		if p.From != nil && p.From.Name == name {
			return true
		}
	}
	for _, sk := range s.set.Skipped {
		if sk.From.Name == name {
			return true
		}
	}
	return false
}

// family is the IR policies a result names: the policy's rule (and its
// autogen rules), every rule when none is named, or a ruleless policy and
// its autogen twins; and what the compiler skipped of them.
func (s *kyvernoSuite) family(name, rule string) ([]*ir.Policy, []ir.Skipped) {
	selects := func(ref *ir.PolicyRef) bool {
		if ref.Name != name {
			return false
		}
		if rule == "" || ref.Kind == "ValidatingPolicy" || ref.Kind == "MutatingPolicy" {
			return true
		}
		return ref.Rule == rule || ref.Rule == "autogen-"+rule || ref.Rule == "autogen-cronjob-"+rule
	}
	var out []*ir.Policy
	for i := range s.set.Policies {
		if p := &s.set.Policies[i]; p.From != nil && selects(p.From) {
			out = append(out, p)
		}
	}
	var skipped []ir.Skipped
	for _, sk := range s.set.Skipped {
		if selects(&sk.From) {
			skipped = append(skipped, sk)
		}
	}
	return out, skipped
}

// paramsUnsupported refuses to judge a ClusterPolicy rule with paramKind:
// kyverno test v1.19 does not find the test's paramResources for a
// validate.cel rule (every result is error: parameter object not found),
// and admitc does not imitate that. A rule's configMap context entry read
// as params (From.ParamsContext) is judged (kyverno_configmap.go).
func paramsUnsupported(family []*ir.Policy) string {
	for _, p := range family {
		if p.ParamKind != nil && p.From.Rule != "" && p.From.ParamsContext == "" {
			return "a validate.cel rule with paramKind: kyverno test v1.19 does not load paramResources for it (it reports error, parameter object not found), so admitc cannot say what kyverno test would"
		}
	}
	return ""
}

func skippedReason(skipped []ir.Skipped) string {
	sk := skipped[0]
	return fmt.Sprintf("%s:%d:%d: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Feature, sk.Reason)
}

// selectResources are the resources a result names (name or
// namespace/name, compared with the end of each resource's key); all of
// them when it names none that exist, as Kyverno does. missing are the
// names that name no resource.
func (s *kyvernoSuite) selectResources(names []string) (out []*unstructured.Unstructured, missing []string) {
	for _, n := range names {
		ns, name, qualified := strings.Cut(n, "/")
		found := false
		for _, o := range s.resources {
			if qualified && o.GetNamespace() == ns && o.GetName() == name || !qualified && o.GetName() == n {
				out = append(out, o)
				found = true
			}
		}
		if !found {
			missing = append(missing, n)
		}
	}
	if len(out) == 0 {
		return s.resources, missing
	}
	return out, missing
}

// judgeResource judges one resource against the result.
func (s *kyvernoSuite) judgeResource(ctx context.Context, r Result, res testResult, family []*ir.Policy, o *unstructured.Unstructured) []Result {
	rulePolicy := family[0].From.Rule != ""
	op := s.operation(res, family[0].From.Name, o, rulePolicy)
	run, err := s.run(ctx, o, op)
	if err != nil {
		return []Result{withOutcome(r, Error, err.Error())}
	}
	responses, present := s.responses(run, family)
	if !present {
		r.Got = "no response: the policy does not match " + describeResource(o) + " (Kyverno reports it as not found)"
		return []Result{withOutcome(r, Failed, "")}
	}
	var out []Result
	for _, rr := range responses {
		row := r
		if res.Rule == "" || rulePolicy {
			row.Test = strings.TrimSuffix(r.Test, "/"+res.Rule) + ruleSuffix(rr.policy)
		}
		actual := o
		if rr.policy.Kind == ir.Mutating && run.mutated != nil {
			actual = run.mutated.Object
		}
		if res.PatchedResources != "" {
			diff, missing, err := s.comparePatched(actual, res.PatchedResources)
			switch {
			case missing && !res.FailOnMissingResources:
				continue
			case err != nil:
				out = append(out, withOutcome(row, Error, err.Error()))
				continue
			case diff != "":
				row.Got = "patched resource differs from " + res.PatchedResources + ": " + diff
				out = append(out, withOutcome(row, Failed, ""))
				continue
			}
		}
		row.Got = rr.status
		if rr.message != "" {
			row.Got += ": " + rr.message
		}
		if rr.status == res.Result {
			out = append(out, withOutcome(row, Passed, ""))
		} else {
			out = append(out, withOutcome(row, Failed, ""))
		}
	}
	switch {
	case len(out) == 0 && len(responses) == 0:
		r.Got = "excluded (the rule does not match the resource; Kyverno counts it as passed)"
		out = append(out, withOutcome(r, Passed, ""))
	case len(out) == 0:
		out = append(out, withOutcome(r, NoResponse, fmt.Sprintf("%s has no %s, so kyverno test gives the result no row (counted neither passed nor failed); failOnMissingResources: true fails it", res.PatchedResources, describeResource(o))))
	}
	return out
}

func ruleSuffix(p *ir.Policy) string {
	if p.From.Rule == "" {
		return ""
	}
	return "/" + p.From.Rule
}

// responses are the rule responses of the family for the run, and whether
// Kyverno would have a response of the policy at all (a rule policy
// always has one; a ValidatingPolicy or MutatingPolicy whose simple
// matchConstraints do not match has none).
func (s *kyvernoSuite) responses(run *evaluationRun, family []*ir.Policy) ([]ruleResponse, bool) {
	var out []ruleResponse
	present := family[0].From.Rule != ""
	for _, p := range family {
		rr, matched := s.response(run, p)
		if matched {
			out = append(out, rr)
			present = true
		} else if !simpleConstraints(p.MatchConstraints) {
			present = true
		}
	}
	return out, present
}

// response is one IR policy's rule response; matched is false when
// Kyverno's engine would give none.
func (s *kyvernoSuite) response(run *evaluationRun, p *ir.Policy) (ruleResponse, bool) {
	result := run.validated
	switch {
	case p.Kind == ir.Mutating:
		result = run.mutated
	case p.From.Rule == "":
		result = run.mutatedValidated
	}
	if result == nil {
		return ruleResponse{}, false
	}
	outcome, detail := lastTrace(result, p.Name)
	rr := ruleResponse{policy: p}
	if outcome == runtime.NoParams && p.From != nil && p.From.ParamsContext != "" {
		// An Audit rule's missing ConfigMap (parameterNotFoundAction
		// Allow): Kyverno's rule fails to load its context.
		rr.status, rr.message = statusError, "failed to load context: no ConfigMap for context entry "+p.From.ParamsContext
		return rr, true
	}
	switch outcome {
	case "", runtime.NotMatched:
		return rr, false
	case runtime.SkippedByConditions:
		if p.From.Rule != "" && !s.probeMatched(run, p) {
			return rr, false
		}
		rr.status, rr.message = statusSkip, "celPreconditions or matchConditions not met"
		if failed, why := preconditionsFailed(run, p); failed {
			rr.status, rr.message = statusError, "failed to evaluate preconditions: "+why
		}
	case runtime.Unchanged:
		rr.status = statusPass
		if p.From != nil && p.From.Rule != "" {
			// A ClusterPolicy mutate rule whose patch changes nothing is
			// Kyverno's skip (pkg/engine/mutate: "no patches applied").
			rr.status, rr.message, rr.noPatches = statusSkip, "no patches applied", true
		}
	case runtime.Passed, runtime.NoParams, runtime.Mutated:
		if _, none := result.AuditAnnotations[p.Name+"."+kyverno.NoResponseAnnotation]; none && p.From != nil && p.From.Rule != "" {
			// A foreach rule that validated no element: Kyverno's
			// engine gives no response.
			return rr, false
		}
		rr.status = statusPass
		if why, ok := result.AuditAnnotations[p.Name+"."+kyverno.SkipAnnotation]; ok && p.From != nil && p.From.Rule != "" {
			// Only a rule reports a pattern's skip; a ruleless policy
			// (ValidatingPolicy) carrying the same annotation passes.
			rr.status, rr.message, rr.patternSkip = statusSkip, why, true
		}
	case runtime.Failed:
		rr.status, rr.message = statusError, detail
	case runtime.Violated:
		rr.status, rr.message = violationStatus(result, p)
	default:
		rr.status, rr.message = statusError, string(outcome)+": "+detail
	}
	return rr, true
}

// violationStatus is fail, or error when the first violation (in the
// order of validations) is an evaluation error of a ruleless policy or of
// a pattern rule (Kyverno's engine error), a mutation's failure, or a
// missing parameter object.
func violationStatus(result *runtime.Result, p *ir.Policy) (string, string) {
	for _, v := range result.Violations {
		if v.Policy != p.Name {
			continue
		}
		configError := strings.HasPrefix(v.Message, "failed to configure")
		if v.Error && (p.From.Rule == "" || configError || p.Kind == ir.Mutating || isPatternRule(p)) {
			return statusError, v.Message
		}
		return statusFail, v.Message
	}
	return statusFail, ""
}

// isPatternRule says whether p is a ClusterPolicy validate.pattern,
// anyPattern, deny or foreach rule: its evaluation error is Kyverno's rule
// error.
func isPatternRule(p *ir.Policy) bool {
	if p.Dynamic != nil {
		return isPatternRule(p.Dynamic)
	}
	for _, v := range p.Variables {
		if v.Name == kyverno.PatternVariable || v.Name == kyverno.OutcomeVariable {
			return true
		}
	}
	return false
}

// preconditionsFailed says whether the match conditions of p, a rule with
// failurePolicy Ignore, failed to evaluate (Kyverno's rule error), and why.
func preconditionsFailed(run *evaluationRun, p *ir.Policy) (bool, string) {
	if run.preconditionProbed == nil || p.FailurePolicy != ir.Ignore {
		return false, ""
	}
	for _, v := range run.preconditionProbed.Violations {
		if v.Policy == p.Name && v.Error {
			return true, v.Message
		}
	}
	return false, ""
}

func (s *kyvernoSuite) probeMatched(run *evaluationRun, p *ir.Policy) bool {
	if run.probed == nil || len(p.MatchConditions) == 0 || p.MatchConditions[0].Name != kyverno.MatchConditionName {
		return true
	}
	outcome, _ := lastTrace(run.probed, p.Name)
	return outcome == runtime.Passed
}

func lastTrace(r *runtime.Result, policy string) (runtime.Outcome, string) {
	var o runtime.Outcome
	var d string
	for _, t := range r.Trace {
		if t.Policy == policy {
			o, d = t.Outcome, t.Detail
		}
	}
	return o, d
}

// simpleConstraints is Kyverno's (misnamed) hasSelector: one resource rule
// without names, no selectors and no exclusions. A ValidatingPolicy whose
// constraints are simple and do not match gives no response at all.
func simpleConstraints(m *ir.MatchResources) bool {
	if m == nil {
		return false
	}
	if s := m.NamespaceSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return false
	}
	if s := m.ObjectSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		return false
	}
	return len(m.ExcludeResourceRules) == 0 && len(m.ResourceRules) == 1 && len(m.ResourceRules[0].ResourceNames) == 0
}

// comparePatched compares actual with the resource of the same apiVersion,
// kind, namespace and name in file, after dropping nulls and empty maps
// and lists (Kyverno's Tidy); missing says the file has no such resource.
func (s *kyvernoSuite) comparePatched(actual *unstructured.Unstructured, file string) (diff string, missing bool, err error) {
	objs, _, err := s.objects([]string{file}, "patchedResources")
	if err != nil {
		return "", false, err
	}
	for _, e := range objs {
		if e.GetAPIVersion() == actual.GetAPIVersion() && e.GetKind() == actual.GetKind() && e.GetNamespace() == actual.GetNamespace() && e.GetName() == actual.GetName() {
			a, x := normalize(tidy(actual.Object)), normalize(tidy(e.Object))
			if reflect.DeepEqual(a, x) {
				return "", false, nil
			}
			return describeDiff(a, x, ""), false, nil
		}
	}
	return "", true, fmt.Errorf("resource with name %s not found in %s", actual.GetName(), file)
}

// tidy drops nulls and empty maps and lists, recursively.
func tidy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e = tidy(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			if e = tidy(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// normalize gives JSON's types (numbers as float64), so int64 and float64
// compare as Kyverno's JSON merge patch compares them.
func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	return out
}

// describeDiff names the first path where actual and expected differ.
func describeDiff(a, e any, path string) string {
	am, aok := a.(map[string]any)
	em, eok := e.(map[string]any)
	if aok && eok {
		for k, ev := range em {
			av, ok := am[k]
			if !ok {
				return fmt.Sprintf("%s.%s: expected %s, got nothing", path, k, compact(ev))
			}
			if !reflect.DeepEqual(av, ev) {
				return describeDiff(av, ev, path+"."+k)
			}
		}
		for k, av := range am {
			if _, ok := em[k]; !ok {
				return fmt.Sprintf("%s.%s: not expected, got %s", path, k, compact(av))
			}
		}
	}
	if path == "" {
		path = "."
	}
	return fmt.Sprintf("%s: expected %s, got %s", path, compact(e), compact(a))
}

func compact(v any) string {
	data, _ := json.Marshal(v)
	s := string(data)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
