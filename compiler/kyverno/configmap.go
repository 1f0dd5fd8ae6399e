package kyverno

import (
	"encoding/json"
	"fmt"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/ir"
)

// A rule's context entry of type configMap is what Kyverno's configMap
// loader (pkg/engine/context/loaders/configmap.go) puts in its context:
// {data: the ConfigMap's data, metadata: its ObjectMeta}, read from the
// cluster when a query first names the entry. admitc reads the ConfigMap
// as the policy's params (paramKind v1 ConfigMap, the binding's paramRef
// naming it), so the API server and serve read it from the cluster too.
//
// A ConfigMap that is missing is, for Kyverno, the rule's error ("failed
// to load context") where it loads the entry: an Enforce rule then blocks
// the request under failurePolicy Fail and admits it under Ignore
// (pkg/utils/engine BlockRequest), an Audit rule admits it. The binding
// says the same: parameterNotFoundAction Deny for an Enforce rule (a
// configuration error, which the policy's failurePolicy decides), Allow
// for an Audit rule (the policy is not evaluated: the request is admitted).
// The API server looks the parameter up before any match condition, so the
// translation is exact only for a rule that loads the entry on every
// request its match constraints select; the others are refused.

// configMapCEL is the entry's value read from params, as the loader builds
// it: data is null on a ConfigMap without data.
const configMapCEL = `{"data": has(params.data) ? dyn(params.data) : null, "metadata": dyn(params.metadata)}`

// configMapEntry is a rule's configMap context entry: its name and the
// ConfigMap it names.
type configMapEntry struct {
	entry, name, namespace, path string
}

// configMapVariable reads the configMap entry e at path as a context
// variable whose value is read from params; policyNamespace is a Policy's
// namespace ("" for a ClusterPolicy).
func configMapVariable(e kyvernov1.ContextEntry, at, policyNamespace string) (conditions.Variable, *configMapEntry, *refusal) {
	cm := e.ConfigMap
	for _, f := range []struct{ field, value string }{{"name", cm.Name}, {"namespace", cm.Namespace}} {
		if strings.Contains(f.value, "{{") || strings.Contains(f.value, "$(") {
			return conditions.Variable{}, nil, &refusal{"context.configMap", at + ".configMap." + f.field, fmt.Sprintf("the ConfigMap's %s %q has variables, which Kyverno substitutes per request; a paramRef names one ConfigMap", f.field, f.value)}
		}
	}
	if cm.Name == "" {
		return conditions.Variable{}, nil, &refusal{"context.configMap", at + ".configMap.name", "a configMap context entry needs the ConfigMap's name"}
	}
	ns := cm.Namespace
	switch {
	case ns == "" && policyNamespace != "":
		ns = policyNamespace
	case ns == "":
		ns = "default"
	case policyNamespace != "" && ns != policyNamespace:
		return conditions.Variable{}, nil, &refusal{"context.configMap", at + ".configMap.namespace", fmt.Sprintf("Kyverno refuses to read a ConfigMap in namespace %q for a Policy of namespace %q: the rule fails wherever it reads the entry", ns, policyNamespace)}
	}
	return conditions.Variable{Name: e.Name, CEL: configMapCEL, ConfigMap: true}, &configMapEntry{entry: e.Name, name: cm.Name, namespace: ns, path: at}, nil
}

// configMapParams makes pol read the rule's ConfigMap as params through
// binding b, when the rule reads it: refused where the rule can finish
// without loading it on a request its match constraints select.
func (r *reader) configMapParams(pol *ir.Policy, b *ir.Binding, c computedRule, generatedMatch bool, enforce bool) *refusal {
	cm := r.configMap
	if cm == nil {
		return nil
	}
	texts := ruleTexts(c.rule)
	if !r.mentions(cm.entry, strings.Join(texts.all, "\n"), nil) {
		return nil
	}
	if f := r.lookupRefusal(cm, c, texts, generatedMatch, pol.From.Namespace); f != nil {
		return f
	}
	pol.ParamKind = &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	action := ir.ParamAllow
	if enforce {
		action = ir.ParamDeny
	}
	b.ParamRef = &ir.ParamRef{Name: cm.name, Namespace: cm.namespace, ParameterNotFoundAction: action}
	pol.From.ParamsContext = cm.entry
	return nil
}

// lookupRefusal refuses the configMap entry cm of rule c when the rule can
// finish without Kyverno loading it on a request its binding selects: the
// API server looks the paramRef up first, so a missing ConfigMap would
// fail requests Kyverno never fails. It says which part of the rule does
// that, and what the author can do. policyNamespace is a Policy's
// namespace.
func (r *reader) lookupRefusal(cm *configMapEntry, c computedRule, texts ruleText, generatedMatch bool, policyNamespace string) *refusal {
	rule := fmt.Sprintf("spec.rules[%d]", c.index)
	lookup := fmt.Sprintf("the API server looks up the paramRef (ConfigMap %s/%s) before it evaluates anything else of the policy", cm.namespace, cm.name)
	var why string
	switch {
	case generatedMatch:
		why = fmt.Sprintf("%s needs a match condition (a binding cannot say it), and %s: where the ConfigMap is missing, requests the rule does not match would fail too. "+
			"admitc translates a configMap entry when the rule's kinds (and operations) alone scope it: one match filter, no exclude, names, namespaces or selectors, in a ClusterPolicy; scope the rule so, or keep it under Kyverno",
			matchConditionCause(c.rule, rule, policyNamespace), lookup)
	case len(c.rule.CELPreconditions) > 0:
		why = fmt.Sprintf("%s.celPreconditions can skip the rule before Kyverno loads the ConfigMap, while %s: where the ConfigMap is missing, requests Kyverno skips would fail. "+
			"admitc translates a configMap entry when Kyverno reads it on every request the rule matches: drop the celPreconditions or make the first condition read %q, or keep the rule under Kyverno", rule, lookup, cm.entry)
	case !r.mentions(cm.entry, texts.first, nil):
		why = fmt.Sprintf("%s.%s, the first condition or pattern Kyverno evaluates, does not read %q, so the rule can finish without loading the ConfigMap, while %s: where the ConfigMap is missing, requests Kyverno admits would fail. "+
			"Put a condition that reads %q first, or keep the rule under Kyverno", rule, texts.firstAt, cm.entry, lookup, cm.entry)
	default:
		return nil
	}
	return &refusal{"context.configMap", cm.path, why}
}

// mentions says whether Kyverno loads the entry named name to evaluate
// text: text names it, or names another context variable whose query or
// value names it.
func (r *reader) mentions(name, text string, seen map[string]bool) bool {
	if conditions.Loads(name, text) {
		return true
	}
	if seen == nil {
		seen = map[string]bool{}
	}
	for _, v := range r.vars {
		if v.CEL != "" || seen[v.Name] || !conditions.Loads(v.Name, text) {
			continue
		}
		seen[v.Name] = true
		if r.mentions(name, v.JMESPath+"\n"+jsonText(v.Value)+"\n"+jsonText(v.Default), seen) {
			return true
		}
	}
	return false
}

// ruleText is what a validate rule evaluates: first, the text Kyverno
// substitutes first on every request the rule matches (the first
// precondition, else the first deny condition, else the pattern); all,
// everything it may substitute.
type ruleText struct {
	first string
	// firstAt is the field of first, relative to the rule
	// (preconditions.any[0], validate.pattern).
	firstAt string
	all     []string
}

func ruleTexts(rule kyvernov1.Rule) ruleText {
	v := rule.Validation
	var t ruleText
	if pre, err := conditions.Decode(rule.GetAnyAllConditions()); err == nil {
		t.first, t.firstAt = firstCondition(pre, "preconditions")
		t.all = append(t.all, jsonText(pre))
	}
	if v == nil {
		return t
	}
	t.all = append(t.all, v.Message)
	switch {
	case v.Deny != nil:
		deny, err := conditions.Decode(v.Deny.GetAnyAllConditions())
		if err == nil && t.first == "" {
			t.first, t.firstAt = firstCondition(deny, "validate.deny.conditions")
		}
		t.all = append(t.all, jsonText(deny))
	case v.GetPattern() != nil || v.GetAnyPattern() != nil:
		p := jsonText(v.GetPattern()) + jsonText(v.GetAnyPattern())
		if t.first == "" {
			t.first, t.firstAt = p, "validate.pattern"
			if v.GetPattern() == nil {
				t.firstAt = "validate.anyPattern"
			}
		}
		t.all = append(t.all, p)
	}
	return t
}

// firstCondition is the key and value of the condition Kyverno evaluates
// first in c (the first any condition, else the first all condition), and
// its field under block.
func firstCondition(c kyvernov1.AnyAllConditions, block string) (string, string) {
	list, at := c.AnyConditions, block+".any[0]"
	if len(list) == 0 {
		list, at = c.AllConditions, block+".all[0]"
	}
	if len(list) == 0 {
		return "", ""
	}
	return jsonText(list[0].GetKey()) + "\n" + jsonText(list[0].GetValue()), at
}

func jsonText(x any) string {
	data, _ := json.Marshal(x)
	return string(data)
}
