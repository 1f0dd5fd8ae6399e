package kyverno

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
)

// clusterPolicyObject is a ClusterPolicy or a Policy: the same spec.
type clusterPolicyObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            kyvernov1.Spec    `json:"spec"`
	Status          any               `json:"status,omitempty"`
}

// clusterPolicy lowers every rule Kyverno would run, autogen rules
// included, to one imported policy each.
func (r *reader) clusterPolicy() {
	var p clusterPolicyObject
	if ds := r.doc.Decode(&p, "a Kyverno "+r.kind); len(ds) > 0 {
		r.diags = append(r.diags, ds...)
		return
	}
	if p.Metadata.Name == "" {
		r.errorf("metadata.name", "missing metadata.name")
		return
	}
	if r.kind == "Policy" && p.Metadata.Namespace == "" {
		p.Metadata.Namespace = "default"
	}
	if r.kind == "ClusterPolicy" {
		p.Metadata.Namespace = ""
	}
	if r.refused(func() field.ErrorList { return clusterPolicyErrors(&p, r.kind) }) {
		return
	}
	if len(p.Spec.Rules) == 0 {
		r.errorf("spec.rules", "a %s needs rules", r.kind)
		return
	}
	if path, msg := kyvernoRefusal(&p.Spec); msg != "" {
		r.errorf(path, "%s", msg)
		return
	}
	for _, c := range computeRules(p.Metadata, &p.Spec) {
		r.rule(&p, c)
	}
}

// ref names a rule of p in Kyverno's terms.
func (r *reader) ref(p *clusterPolicyObject, c computedRule) ir.PolicyRef {
	return ir.PolicyRef{APIVersion: r.apiVersion, Kind: r.kind, Namespace: p.Metadata.Namespace, Name: p.Metadata.Name, Rule: c.rule.Name, AutogenOf: c.autogenOf,
		Severity: p.Metadata.Annotations[ir.SeverityAnnotation], Category: p.Metadata.Annotations[ir.CategoryAnnotation]}
}

// irName is a rule's IR policy name: POLICY.RULE, NAMESPACE.POLICY.RULE
// for a Policy, made a valid object name (a rule may be called
// validate-readOnlyRootFilesystem, and the name names the admission policy).
func irName(ref ir.PolicyRef) string {
	name := ref.Name + "." + ref.Rule
	if ref.Kind == "Policy" {
		name = ref.Namespace + "." + name
	}
	return ir.ObjectName(name, ir.MaxObjectNameLength)
}

// rule lowers one rule, or records why it cannot.
func (r *reader) rule(p *clusterPolicyObject, c computedRule) {
	ref := r.ref(p, c)
	path := fmt.Sprintf("spec.rules[%d]", c.index)
	if f := policyRefusal(&p.Spec); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	if f := ruleRefusal(c.rule, path); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	var given func(string) (any, bool)
	if r.contextValues != nil {
		given = func(entry string) (any, bool) { return r.contextValues(p.Metadata.Name, c.rule.Name, entry) }
	}
	vars, cm, f := ruleContext(c.rule, path, p.Metadata.Namespace, given)
	if f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	r.vars, r.configMap = vars, cm
	m, f := r.lowerMatch(c.rule, path, p.Metadata.Namespace)
	if f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	v := c.rule.Validation
	name := irName(ref)
	pol := &ir.Policy{
		Name: name, Type: Type, Kind: ir.Validating, Origin: r.origin(path),
		FailurePolicy: ir.Fail, MatchConstraints: m.constraints, From: &ref, UnresolvedKinds: m.unresolved,
	}
	if m.condition != "" {
		o := r.origin(path + ".match")
		o.Path = path + ".match (generated)"
		pol.MatchConditions = append(pol.MatchConditions, ir.NamedExpression{Name: MatchConditionName, Expression: m.condition, Origin: o})
	}
	pol.MatchConditions = append(pol.MatchConditions, r.conditions(c.rule.CELPreconditions, path+".celPreconditions")...)
	if c.rule.RawAnyAllConditions != nil {
		pre, f := r.preconditions(c, path, r.scope(conditions.Scope{}))
		if f != nil {
			r.skip(ref, f.path, f.feature, "%s", f.why)
			return
		}
		pol.MatchConditions = append(pol.MatchConditions, ir.NamedExpression{Name: PreconditionsName, Expression: pre, Origin: r.origin(path + ".preconditions")})
	}
	if c.rule.Mutation != nil {
		r.mutatingRule(p, pol, c, path)
		return
	}
	actions := failureActions(&p.Spec, v)
	b := ir.Binding{Name: name, Origin: pol.Origin, Actions: actions}
	if v.CEL != nil {
		b.ParamRef = apiconv.FromParamRef(v.CEL.ParamRef)
		r.celRule(pol, c, path, &p.Spec)
	} else if v.Deny != nil {
		if f := r.denyRule(pol, c, path, m, actions[0] == ir.Deny); f != nil {
			r.skip(ref, f.path, f.feature, "%s", f.why)
			return
		}
		if fp := p.Spec.FailurePolicy; fp != nil && *fp == kyvernov1.Ignore {
			pol.FailurePolicy = ir.Ignore
		}
	} else if v.PodSecurity != nil {
		if f := r.podSecurityRule(pol, c, path, m, actions[0] == ir.Deny); f != nil {
			r.skip(ref, f.path, f.feature, "%s", f.why)
			return
		}
		pol.MatchConstraints.ResourceRules = withoutDelete(pol.MatchConstraints.ResourceRules)
		if len(pol.MatchConstraints.ResourceRules) == 0 {
			r.skip(ref, path+".match", "podSecurity rule on DELETE only", "Kyverno's podSecurity handler skips DELETE requests, so this rule never gives a response")
			return
		}
		if fp := p.Spec.FailurePolicy; fp != nil && *fp == kyvernov1.Ignore {
			pol.FailurePolicy = ir.Ignore
		}
	} else if v.GetPattern() == nil && v.GetAnyPattern() == nil && len(v.ForEachValidation) > 0 {
		if f := r.foreachRule(pol, c, path, m, actions[0] == ir.Deny); f != nil {
			r.skip(ref, f.path, f.feature, "%s", f.why)
			return
		}
		if fp := p.Spec.FailurePolicy; fp != nil && *fp == kyvernov1.Ignore {
			pol.FailurePolicy = ir.Ignore
		}
	} else {
		if f := r.patternRule(pol, c, path, m, actions[0] == ir.Deny); f != nil {
			r.skip(ref, f.path, f.feature, "%s", f.why)
			return
		}
		pol.MatchConstraints.ResourceRules = withoutDelete(pol.MatchConstraints.ResourceRules)
		if len(pol.MatchConstraints.ResourceRules) == 0 {
			r.skip(ref, path+".match", "pattern rule on DELETE only", "Kyverno's validate handler does not evaluate a pattern rule on DELETE, so this rule never gives a response")
			return
		}
		if fp := p.Spec.FailurePolicy; fp != nil && *fp == kyvernov1.Ignore {
			pol.FailurePolicy = ir.Ignore
		}
	}
	if f := r.contextVariables(pol, path); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	if f := r.configMapParams(pol, &b, c, m.condition != "", actions[0] == ir.Deny); f != nil {
		r.skip(ref, f.path, f.feature, "%s", f.why)
		return
	}
	pol.Bindings = []ir.Binding{b}
	if pol.ParamKind != nil && b.ParamRef == nil {
		r.errorf(path+".validate.cel", "paramKind needs a paramRef: the parameter objects this rule reads")
	}
	withImages(pol)
	if isPatternRule(v) {
		if tp := r.typedPatternRule(pol, c, m, actions[0] == ir.Deny); tp != nil {
			pol = tp
		}
	}
	if v.PodSecurity != nil && Translated(pol) {
		if tp := r.typedPodSecurityRule(pol, c, m, actions[0] == ir.Deny); tp != nil {
			pol = tp
		}
	}
	if v.Deny != nil && Translated(pol) {
		if td := r.typedDenyRule(pol, c, m, actions[0] == ir.Deny); td != nil {
			pol = td
		}
	}
	if len(v.ForEachValidation) > 0 && v.GetPattern() == nil && v.GetAnyPattern() == nil && v.Deny == nil && Translated(pol) {
		if tf := r.typedForEachRule(pol, c, m, actions[0] == ir.Deny); tf != nil {
			pol = tf
		}
	}
	if pol.Dynamic == nil && v.CEL == nil && Translated(pol) {
		if sp := r.simplifiedRule(pol, c); sp != nil {
			pol = sp
		}
	}
	r.policies = append(r.policies, pol)
}

// isPatternRule says whether a validate block is a pattern or anyPattern
// rule (not cel, deny, podSecurity or foreach).
func isPatternRule(v *kyvernov1.Validation) bool {
	return v.CEL == nil && v.Deny == nil && v.PodSecurity == nil && (v.GetPattern() != nil || v.GetAnyPattern() != nil)
}

// mutatingRule finishes pol as the mutate rule's policy: no DELETE (there
// is no object to patch), the policy's failurePolicy, one binding.
func (r *reader) mutatingRule(p *clusterPolicyObject, pol *ir.Policy, c computedRule, path string) {
	if f := r.mutateRule(pol, c, path); f != nil {
		r.skip(*pol.From, f.path, f.feature, "%s", f.why)
		return
	}
	pol.MatchConstraints.ResourceRules = withoutDelete(pol.MatchConstraints.ResourceRules)
	if len(pol.MatchConstraints.ResourceRules) == 0 {
		r.skip(*pol.From, path+".match", "mutate rule on DELETE only", "a DELETE has no object to patch, so this rule never changes anything")
		return
	}
	if fp := p.Spec.FailurePolicy; fp != nil && *fp == kyvernov1.Ignore {
		pol.FailurePolicy = ir.Ignore
	}
	pol.Bindings = []ir.Binding{{Name: pol.Name, Origin: pol.Origin}}
	withImages(pol)
	r.policies = append(r.policies, pol)
}

// celRule fills pol with a validate.cel rule's variables, validations,
// audit annotations and paramKind.
func (r *reader) celRule(pol *ir.Policy, c computedRule, path string, spec *kyvernov1.Spec) {
	v := c.rule.Validation
	cel := v.CEL
	pol.CEL = ir.CELKyvernoRule
	pol.Variables = r.variables(cel.Variables, path+".validate.cel.variables")
	pol.Validations = r.validations(cel.Expressions, v.Message, path+".validate.cel.expressions")
	pol.AuditAnnotations = r.auditAnnotations(cel.AuditAnnotations, path+".validate.cel.auditAnnotations")
	if cel.ParamKind != nil {
		pol.ParamKind = &ir.ParamKind{APIVersion: cel.ParamKind.APIVersion, Kind: cel.ParamKind.Kind}
	}
	if len(pol.Validations) == 0 && len(pol.AuditAnnotations) == 0 {
		r.errorf(path+".validate.cel", "validate.cel needs expressions or auditAnnotations")
	}
	if fp := spec.FailurePolicy; fp != nil && *fp == kyvernov1.Ignore {
		pol.Notes = append(pol.Notes, "spec.failurePolicy Ignore is what Kyverno's webhook does when Kyverno is unreachable; a CEL error in a validate.cel rule still fails the rule, so this policy has failurePolicy Fail")
	}
}

// failureActions are a rule's validationActions, as Kyverno's webhook acts:
// Enforce denies; Audit (the default) admits and reports (Audit), and
// warns the client only when spec.emitWarning is true.
func failureActions(spec *kyvernov1.Spec, v *kyvernov1.Validation) []ir.Action {
	action := spec.ValidationFailureAction
	if v.FailureAction != nil {
		action = *v.FailureAction
	}
	if action.Enforce() {
		return []ir.Action{ir.Deny}
	}
	if spec.EmitWarning != nil && *spec.EmitWarning {
		return []ir.Action{ir.Warn, ir.Audit}
	}
	return []ir.Action{ir.Audit}
}

// policyRefusal is a policy-level setting admitc cannot honour.
func policyRefusal(spec *kyvernov1.Spec) *refusal {
	switch {
	case spec.ApplyRules != nil && *spec.ApplyRules == kyvernov1.ApplyOne:
		return &refusal{"applyRules: One", "spec.applyRules", "with One, Kyverno applies only the first rule that matches; admitc's rules are independent policies: drop applyRules if no two rules match the same request, or keep the policy under Kyverno"}
	case len(spec.ValidationFailureActionOverrides) > 0:
		return &refusal{"validationFailureActionOverrides", "spec.validationFailureActionOverrides", "per-namespace actions are not translated yet; use failureAction and a namespaceSelector per policy"}
	case spec.WebhookConfiguration != nil && len(spec.WebhookConfiguration.MatchConditions) > 0:
		return &refusal{"webhookConfiguration.matchConditions", "spec.webhookConfiguration.matchConditions", "Kyverno filters requests by them in its webhook, not in its engine; move them to each rule's celPreconditions"}
	}
	return nil
}

// ruleRefusal names what a rule needs that admitc cannot evaluate.
func ruleRefusal(rule kyvernov1.Rule, path string) *refusal {
	switch {
	case rule.Mutation != nil:
		return mutateRefusal(rule.Mutation, path)
	case rule.Generation != nil:
		return &refusal{"generate", path + ".generate", "generate rules create other objects, which no admission policy can do; keep this rule under Kyverno"}
	case len(rule.VerifyImages) > 0:
		return &refusal{"verifyImages", path + ".verifyImages", "image signatures and attestations are fetched from registries at admission, which no admission policy can do; keep this rule under Kyverno"}
	case rule.Validation == nil:
		return &refusal{"rule without validate", path, "the rule has no validate, mutate, generate or verifyImages block: give it one, or remove it"}
	}
	v := rule.Validation
	vp := path + ".validate"
	switch {
	case len(v.FailureActionOverrides) > 0:
		return &refusal{"validate.failureActionOverrides", vp + ".failureActionOverrides", "per-namespace actions are not translated yet; set the rule's failureAction and split the rule by namespace (a namespaceSelector each)"}
	case v.Deny != nil:
		return nil
	case v.PodSecurity != nil && emptyPodSecurity(v.PodSecurity):
		return &refusal{"validate.podSecurity", vp + ".podSecurity", "an empty podSecurity block is not a podSecurity rule to Kyverno's engine (it runs the rule's other validate settings); give a level"}
	case v.PodSecurity != nil:
		return nil
	case v.Manifests != nil:
		return &refusal{"validate.manifests", vp + ".manifests", "manifest signatures are verified with keys Kyverno fetches at admission; keep this rule under Kyverno"}
	case v.DeprecatedAssert != nil:
		return &refusal{"validate.assert", vp + ".assert", "kyverno-json assertion trees are not translated; write the check as validate.cel, or keep this rule under Kyverno"}
	case v.GetPattern() != nil || v.GetAnyPattern() != nil:
		return messageRefusal(v.Message, vp, false)
	case len(v.ForEachValidation) > 0:
		return messageRefusal(v.Message, vp, true)
	case v.CEL == nil:
		return &refusal{"validate without cel", vp, "the validate block has no pattern, anyPattern, deny, foreach, podSecurity or cel check: add one"}
	}
	return nil
}

// referenceRegex is Kyverno's regex.RegexReferences: a $( ) reference,
// not preceded by a backslash.
var referenceRegex = regexp.MustCompile(`^\$\(.[^\ ]*\)|[^\\]\$\(.[^\ ]*\)`)

// messageReferences says whether a rule's message has $( ) references,
// which Kyverno resolves against the message string itself, where no path
// resolves: substituting the message always fails.
func messageReferences(message string) bool { return referenceRegex.MatchString(message) }

// messageRefusal refuses the $( ) references of a rule's message that
// admitc does not translate: escaped ones (Kyverno unescapes them), and
// any in a foreach rule ({{ }} variables are translated, and a pattern
// rule's references give Kyverno's substitution error message).
func messageRefusal(message, vp string, foreach bool) *refusal {
	switch {
	case strings.Contains(message, `\$(`):
		return &refusal{"validate.message references", vp + ".message", "escaped \\$( ) references in a message are not translated (Kyverno unescapes them); write the message without them"}
	case foreach && messageReferences(message):
		return &refusal{"validate.message references", vp + ".message", "$( ) references in a foreach rule's message are not translated: Kyverno resolves them against the message string itself, where no path resolves, and its element messages then differ; write the message without them"}
	}
	return nil
}

// contextNameRegex is a context variable name admitc translates: a
// JMESPath identifier (Kyverno stores the entry under its whole name, so a
// name with a dot is a key no query reaches).
var contextNameRegex = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loopNameRegex is a name a foreach puts in the context for each element.
var loopNameRegex = regexp.MustCompile(`^element(Index)?[0-9]+$`)

// ruleContext reads a rule's context: admitc translates variable entries
// (computed from the request, conditions.Variable) in validate rules, one
// configMap entry in deny and pattern rules (read as params), and apiCall
// entries whose value given supplies (a test's values, see ContextValues),
// and refuses the entries Kyverno loads from outside the request otherwise.
func ruleContext(rule kyvernov1.Rule, path, policyNamespace string, given func(string) (any, bool)) ([]conditions.Variable, *configMapEntry, *refusal) {
	var out []conditions.Variable
	var cm *configMapEntry
	seen := map[string]bool{}
	for i, e := range rule.Context {
		at := fmt.Sprintf("%s.context[%d]", path, i)
		var value any
		fromValues := false
		if e.APICall != nil && given != nil {
			value, fromValues = given(e.Name)
		}
		if f := contextNameRefusal(rule, e, at, seen, fromValues); f != nil {
			return nil, nil, f
		}
		seen[e.Name] = true
		if fromValues {
			v, f := givenVariable(e.Name, value, at)
			if f != nil {
				return nil, nil, f
			}
			out = append(out, v)
			continue
		}
		if e.ConfigMap != nil {
			if f := configMapRuleRefusal(rule, at, cm != nil); f != nil {
				return nil, nil, f
			}
			v, entry, f := configMapVariable(e, at, policyNamespace)
			if f != nil {
				return nil, nil, f
			}
			out, cm = append(out, v), entry
			continue
		}
		cv, f := contextVariable(e, at)
		if f != nil {
			return nil, nil, f
		}
		out = append(out, cv)
	}
	return out, cm, nil
}

// configMapRuleRefusal refuses a configMap entry in a rule whose kind
// admitc does not read it in, or a second one.
func configMapRuleRefusal(rule kyvernov1.Rule, at string, second bool) *refusal {
	v := rule.Validation
	switch {
	case second:
		return &refusal{"context.configMap", at, "a second configMap context entry in a rule is not translated: an admission policy reads one parameter object (its binding's paramRef); keep the data in one ConfigMap, or keep this rule under Kyverno"}
	case v == nil || v.Deny == nil && v.GetPattern() == nil && v.GetAnyPattern() == nil:
		return &refusal{"context.configMap", at, "configMap context entries are translated in validate rules with deny conditions or a pattern; not yet in foreach, podSecurity, cel or mutate rules: keep this rule under Kyverno"}
	}
	return nil
}

// givenVariable is the context variable name holding value, given by a
// test's values for an apiCall entry: a constant, as Kyverno's
// AddVariable puts it in the context (through JSON, so numbers are
// float64; no {{ }} substitution, which admitc would otherwise do on a
// variable's value, so a value holding {{ is refused).
func givenVariable(name string, value any, at string) (conditions.Variable, *refusal) {
	refuse := func(why string) (conditions.Variable, *refusal) {
		return conditions.Variable{}, &refusal{"context.apiCall", at, "the test's values give the apiCall entry " + name + " " + why}
	}
	v, err := untyped(value)
	if err != nil {
		return refuse(fmt.Sprintf("a value that is not JSON (%v)", err))
	}
	if data, _ := json.Marshal(v); strings.Contains(string(data), "{{") {
		return refuse("a value holding {{, which Kyverno keeps as text and admitc would substitute: write the value without {{")
	}
	c, err := conditions.Literal(v)
	if err != nil {
		return refuse(err.Error())
	}
	return conditions.Variable{Name: name, CEL: c}, nil
}

// contextNameRefusal refuses a context entry's name admitc cannot read
// (or any entry but a variable or configMap one, or an apiCall one whose
// value a test's values give).
func contextNameRefusal(rule kyvernov1.Rule, e kyvernov1.ContextEntry, at string, seen map[string]bool, fromValues bool) *refusal {
	feature := contextFeature(e)
	switch {
	case e.APICall != nil && !fromValues:
		return &refusal{feature, at, "Kyverno loads this context entry from the API server (or a service) at admission; an admission policy cannot: keep this rule under Kyverno (admitc verify reads the entry from a Kyverno test's values, as kyverno test does offline)"}
	case e.Variable == nil && e.ConfigMap == nil && !fromValues:
		return &refusal{feature, at, "Kyverno loads this context entry from outside the admission request (the API server, an image registry or its global context); an admission policy cannot load it: keep this rule under Kyverno"}
	case rule.Mutation != nil && len(rule.Mutation.ForEachMutation) > 0:
		return &refusal{feature, at, "context variables of mutate.foreach rules are not translated yet (Kyverno reloads them as each element patches the object); they are translated in validate rules and in other mutate rules: keep this rule under Kyverno"}
	case !contextNameRegex.MatchString(e.Name):
		return &refusal{feature, at + ".name", fmt.Sprintf("the context variable name %q is not a JMESPath identifier, which admitc needs to read it: rename it (letters, digits and _, not starting with a digit)", e.Name)}
	case loopNameRegex.MatchString(e.Name):
		return &refusal{feature, at + ".name", fmt.Sprintf("the context variable name %q is also the name of a foreach element or index: rename it", e.Name)}
	case seen[e.Name]:
		return &refusal{feature, at + ".name", fmt.Sprintf("a second context variable named %q is not translated (Kyverno loads both, the later replacing the earlier): remove or rename one", e.Name)}
	}
	return nil
}

// contextVariable reads a context entry of type variable.
func contextVariable(e kyvernov1.ContextEntry, at string) (conditions.Variable, *refusal) {
	v := e.Variable
	if strings.Contains(v.JMESPath, "{{") {
		return conditions.Variable{}, &refusal{"context.variable", at + ".variable.jmesPath", "{{ }} variables inside a context variable's jmesPath are not translated: read the value with a plain query (or a value with {{ }} variables), or keep this rule under Kyverno"}
	}
	cv := conditions.Variable{Name: e.Name, JMESPath: v.JMESPath}
	var err error
	if x := v.GetValue(); x != nil {
		cv.HasValue = true
		if cv.Value, err = untyped(x); err != nil {
			return cv, &refusal{"context.variable", at + ".variable.value", err.Error()}
		}
	}
	if x := v.GetDefault(); x != nil {
		cv.HasDefault = true
		if cv.Default, err = untyped(x); err != nil {
			return cv, &refusal{"context.variable", at + ".variable.default", err.Error()}
		}
	}
	return cv, nil
}

// untyped is Kyverno's DocumentToUntyped: x through JSON (numbers become
// float64).
func untyped(x any) (any, error) {
	data, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(data, &out)
	return out, err
}

// scope is s with the current rule's context variables, computed where
// they are read (a match condition reads no policy variable).
func (r *reader) scope(s conditions.Scope) conditions.Scope {
	s.Context = r.vars
	return s
}

// ContextVariablePrefix names the policy variable holding a rule's context
// variable: kyvernoContext_NAME.
const ContextVariablePrefix = "kyvernoContext_"

// validationScope is scope for the CEL of a validate rule's variables,
// validations and messages: a context variable read at rule level is read
// from its policy variable (contextVariables declares it).
func (r *reader) validationScope(s conditions.Scope) conditions.Scope {
	s = r.scope(s)
	s.ContextVariables = "variables." + ContextVariablePrefix
	return s
}

// contextVariables declares, first among pol's variables, the context
// variables its CEL reads (and those these read), in the rule's order.
func (r *reader) contextVariables(pol *ir.Policy, path string) *refusal {
	if len(r.vars) == 0 {
		return nil
	}
	var text strings.Builder
	for _, v := range pol.Variables {
		text.WriteString(v.Expression + "\n")
	}
	for _, v := range pol.Validations {
		text.WriteString(v.Expression + "\n" + v.MessageExpression + "\n")
	}
	for _, a := range pol.AuditAnnotations {
		text.WriteString(a.ValueExpression + "\n")
	}
	s := r.validationScope(conditions.Scope{})
	needed := make([]string, len(r.vars))
	for i := len(r.vars) - 1; i >= 0; i-- {
		name := ContextVariablePrefix + r.vars[i].Name
		if !referencesVariable(text.String(), name) {
			continue
		}
		e, err := s.VariableExpression(i)
		if err != nil {
			return &refusal{"context.variable", fmt.Sprintf("%s.context[%d]", path, i), err.Error()}
		}
		needed[i] = e
		text.WriteString(e + "\n")
	}
	var vars []ir.NamedExpression
	for i, e := range needed {
		if e != "" {
			vars = append(vars, ir.NamedExpression{Name: ContextVariablePrefix + r.vars[i].Name, Expression: e, Origin: r.origin(fmt.Sprintf("%s.context[%d].variable", path, i))})
		}
	}
	pol.Variables = append(vars, pol.Variables...)
	return nil
}

// referencesVariable says whether the CEL text reads variables.NAME.
func referencesVariable(text, name string) bool {
	return regexp.MustCompile(`\bvariables\.` + regexp.QuoteMeta(name) + `\b`).MatchString(text)
}

func contextFeature(e kyvernov1.ContextEntry) string {
	switch {
	case e.APICall != nil:
		return "context.apiCall"
	case e.ConfigMap != nil:
		return "context.configMap"
	case e.ImageRegistry != nil:
		return "context.imageRegistry"
	case e.GlobalReference != nil:
		return "context.globalReference"
	case e.Variable != nil:
		return "context.variable"
	}
	return "context"
}

func (r *reader) variables(vs []admissionregistrationv1.Variable, list string) []ir.NamedExpression {
	var out []ir.NamedExpression
	for i, v := range vs {
		out = append(out, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: r.origin(fmt.Sprintf("%s[%d].expression", list, i))})
	}
	return out
}

func (r *reader) conditions(cs []admissionregistrationv1.MatchCondition, list string) []ir.NamedExpression {
	var out []ir.NamedExpression
	for i, c := range cs {
		if c.Name == MatchConditionName {
			r.errorf(fmt.Sprintf("%s[%d].name", list, i), "the name %q is reserved by admitc for the condition it generates from match and exclude", MatchConditionName)
		}
		out = append(out, ir.NamedExpression{Name: c.Name, Expression: c.Expression, Origin: r.origin(fmt.Sprintf("%s[%d].expression", list, i))})
	}
	return out
}

// validations are the rule's expressions; one without a message inherits
// validate.message, as Kyverno's handler does.
func (r *reader) validations(vs []admissionregistrationv1.Validation, message, list string) []ir.Validation {
	var out []ir.Validation
	for i, v := range vs {
		path := fmt.Sprintf("%s[%d]", list, i)
		val := ir.Validation{Expression: v.Expression, Message: v.Message, MessageExpression: v.MessageExpression, Origin: r.origin(path + ".expression")}
		if val.Message == "" {
			val.Message = message
		}
		if v.Reason != nil {
			val.Reason = string(*v.Reason)
		}
		if v.MessageExpression != "" {
			mo := r.origin(path + ".messageExpression")
			val.MessageExpressionOrigin = &mo
		}
		out = append(out, val)
	}
	return out
}

func (r *reader) auditAnnotations(as []admissionregistrationv1.AuditAnnotation, list string) []ir.AuditAnnotation {
	var out []ir.AuditAnnotation
	for i, a := range as {
		out = append(out, ir.AuditAnnotation{Key: a.Key, ValueExpression: a.ValueExpression, Origin: r.origin(fmt.Sprintf("%s[%d].valueExpression", list, i))})
	}
	return out
}
