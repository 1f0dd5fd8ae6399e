package kyverno

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

const (
	// Group is the API group of ClusterPolicy and Policy.
	Group = "kyverno.io"
	// PoliciesGroup is the API group of ValidatingPolicy and MutatingPolicy.
	PoliciesGroup = "policies.kyverno.io"
	// Type is the IR policy type of every policy read from Kyverno.
	Type = "kyverno"
	// AutogenAnnotation lists the pod controllers of a ClusterPolicy's
	// autogen rules ("none" for none).
	AutogenAnnotation = "pod-policies.kyverno.io/autogen-controllers"
	// MatchConditionName names the generated matchCondition that decides a
	// rule's match and exclude as Kyverno does; a test runner tells "not
	// matched" from "skipped by celPreconditions" by it.
	MatchConditionName = "kyverno-match"
)

// Kinds this frontend reads, by group.
var Kinds = map[string][]string{
	Group:         {"ClusterPolicy", "Policy"},
	PoliciesGroup: {"ValidatingPolicy", "NamespacedValidatingPolicy", "MutatingPolicy"},
}

// Result is what one document holds: the policies it compiles to, and the
// rules or policies it holds that admitc cannot evaluate.
type Result struct {
	Policies []*ir.Policy
	Skipped  []ir.Skipped
}

// Options are what the frontend knows besides the document.
type Options struct {
	// Kinds resolves the kinds a rule matches to the resources that serve
	// them and to their schema; nil resolves the built-in kinds only.
	Kinds *kubeschema.Resolver
	// ContextValues, when set, give apiCall context entries their values.
	ContextValues ContextValues
	// Roles, when set, are the requesting user's roles and cluster roles
	// (a Kyverno test's userinfo file): a rule's roles and clusterRoles
	// filters are decided for them. Nil: such a rule is refused.
	Roles *UserRoles
}

// UserRoles are the roles and cluster roles Kyverno resolves for the
// requesting user from RoleBindings and ClusterRoleBindings; offline,
// kyverno test takes them from the test's userinfo file (none without
// one).
type UserRoles struct {
	Roles, ClusterRoles []string
}

// ContextValues returns the value a Kyverno test's values give the context
// entry named entry of the rule named rule (an autogen rule by its own
// name) of policy, and whether they give one. Offline, kyverno test
// v1.19.1 loads no apiCall entry (store/contextloader.go: its client is
// nil without clusterResources) and puts the values in the rule's context
// before its entries load (store.GetPolicyRule, jsonContext.AddVariable):
// such an entry then holds the value as given, without substitution, and
// cannot fail.
type ContextValues func(policy, rule, entry string) (value any, ok bool)

// Read decodes one kyverno.io or policies.kyverno.io document.
func Read(doc *source.Doc, opts Options) (*Result, diag.Diagnostics) {
	gv, err := schema.ParseGroupVersion(doc.Field("apiVersion"))
	kinds := opts.Kinds
	if kinds == nil {
		kinds = kubeschema.Builtins()
	}
	r := &reader{doc: doc, apiVersion: doc.Field("apiVersion"), kind: doc.Field("kind"), kinds: kinds, contextValues: opts.ContextValues, roles: opts.Roles}
	switch {
	case err == nil && gv.Group == Group && (gv.Version == "v1" || gv.Version == "v2beta1") && (r.kind == "ClusterPolicy" || r.kind == "Policy"):
		// kyverno.io/v2beta1 (deprecated) holds the same fields; Kyverno's
		// CLI reads it into the v1 types too (policy/load.go).
		r.clusterPolicy()
	case err == nil && gv.Group == PoliciesGroup && knownVersion(gv.Version) && (r.kind == "ValidatingPolicy" || r.kind == "NamespacedValidatingPolicy"):
		r.validatingPolicy()
	case err == nil && gv.Group == PoliciesGroup && knownVersion(gv.Version) && r.kind == "MutatingPolicy":
		r.mutatingPolicy()
	default:
		r.errorf("kind", "admitc reads %s/v1 (and v2beta1) ClusterPolicy and Policy, and %s ValidatingPolicy, NamespacedValidatingPolicy and MutatingPolicy in v1alpha1, v1beta1 and v1; not %s %s",
			Group, PoliciesGroup, r.apiVersion, r.kind)
	}
	if len(r.diags) > 0 {
		return nil, r.diags
	}
	return &Result{Policies: r.policies, Skipped: r.skipped}, nil
}

func knownVersion(v string) bool { return v == "v1alpha1" || v == "v1beta1" || v == "v1" }

type reader struct {
	doc        *source.Doc
	apiVersion string
	kind       string
	kinds      *kubeschema.Resolver
	policies   []*ir.Policy
	skipped    []ir.Skipped
	diags      diag.Diagnostics
	// vars are the context variables of the rule being lowered.
	vars []conditions.Variable
	// configMap is the configMap context entry of the rule being lowered
	// (nil: none).
	configMap *configMapEntry
	// contextValues are Options.ContextValues.
	contextValues ContextValues
	// roles are Options.Roles.
	roles *UserRoles
}

// origin is the origin of the field at path, or of the document.
func (r *reader) origin(path string) ir.Origin {
	if n := r.doc.NodeAt(path); n != nil {
		return r.doc.Origin(n, path)
	}
	o := r.doc.Origin(r.doc.Root, path)
	return o
}

func (r *reader) errorf(path, format string, args ...any) {
	r.diags = append(r.diags, diag.Diagnostic{Origin: r.origin(path), Message: fmt.Sprintf(format, args...)})
}

// skip records that the rule or policy ref cannot be evaluated, because of
// feature at path.
func (r *reader) skip(ref ir.PolicyRef, path, feature, format string, args ...any) {
	r.skipped = append(r.skipped, ir.Skipped{Origin: r.origin(path), From: ref, Feature: feature, Reason: fmt.Sprintf(format, args...)})
}
