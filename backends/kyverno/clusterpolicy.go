package kyverno

import (
	"encoding/json"
	"fmt"

	"github.com/kyverno/kyverno/api/kyverno"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/ir"
)

// ClusterPolicyBackend emits kyverno.io/v1 ClusterPolicies.
type ClusterPolicyBackend struct{}

var _ backends.Backend = ClusterPolicyBackend{}

// Name implements backends.Backend.
func (ClusterPolicyBackend) Name() string { return "kyverno" }

// Rejects implements backends.Backend: every policy is expressed.
func (ClusterPolicyBackend) Rejects(p *ir.Policy) string { return rejectImported(p) }

// rejectImported refuses imported admission policies: their bindings'
// selectors and parameters have no Kyverno translation yet.
func rejectImported(p *ir.Policy) string {
	if p.Imported() {
		return "an imported admission policy with its own bindings has no Kyverno translation yet (use --backend vap,map or webhook)"
	}
	return ""
}

// Generate implements backends.Backend: one ClusterPolicy with one rule per
// policy, in IR order.
func (ClusterPolicyBackend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	var out backends.Output
	var diags diag.Diagnostics
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Imported() {
			continue
		}
		rule := rule(p, opts.Namespaces)
		cp := &kyvernov1.ClusterPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: kyvernov1.SchemeGroupVersion.String(), Kind: "ClusterPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: backends.Labels(), Annotations: annotations(p)},
			Spec: kyvernov1.Spec{
				Rules:         []kyvernov1.Rule{rule},
				FailurePolicy: ptr(kyvernov1.FailurePolicyType(p.FailurePolicy)),
				// Rules read the admission request, which background scans do not have.
				Background: ptr(false),
			},
		}
		if p.HasAction(ir.Warn) {
			cp.Spec.EmitWarning = ptr(true)
		}
		obj, err := cleaned(cp)
		if err != nil {
			diags = append(diags, backends.Errorf(p.Origin, "%v", err))
			continue
		}
		out.Objects = append(out.Objects, obj)
	}
	return out, diags
}

// native reports whether the policy is written as a Kyverno pattern or
// patch, matched on Pods with autogen on (rules autogen-NAME cover the
// controllers, as Kyverno users expect); everything else is validate.cel
// matching every kind explicitly, with autogen off.
func native(p *ir.Policy) bool {
	switch p.Type {
	case "memory-limit", "required-labels", "default-requests", "add-labels":
		return onlyPodKinds(p)
	}
	return false
}

// onlyPodKinds is true when the policy matches exactly admitc's default
// kinds, which is what Kyverno's autogen covers from a Pod rule.
func onlyPodKinds(p *ir.Policy) bool {
	return len(p.Match.Resources) == len(ir.PodKinds) && p.Match.Resources[0].Kind == "Pod"
}

func annotations(p *ir.Policy) map[string]string {
	a := map[string]string{"admitc.dev/origin": fmt.Sprintf("%s:%d:%d", p.Origin.File, p.Origin.Line, p.Origin.Column)}
	if !native(p) {
		a["pod-policies.kyverno.io/autogen-controllers"] = "none"
	}
	return a
}

func rule(p *ir.Policy, namespaces []string) kyvernov1.Rule {
	r := kyvernov1.Rule{Name: p.Name, MatchResources: match(p, namespaces)}
	if len(namespaces) == 0 {
		r.ExcludeResources = &kyvernov1.MatchResources{Any: kyvernov1.ResourceFilters{{ResourceDescription: kyvernov1.ResourceDescription{Namespaces: []string{"kube-system"}}}}}
	}
	switch {
	case p.Kind == ir.Mutating:
		r.Mutation = mutation(p)
	case native(p):
		r.Validation = patternValidation(p)
	default:
		r.CELPreconditions = backends.MatchConditions(p.MatchConditions)
		r.Validation = celValidation(p)
	}
	return r
}

func match(p *ir.Policy, namespaces []string) kyvernov1.MatchResources {
	var kinds []string
	if native(p) {
		kinds = []string{"Pod"}
	} else {
		for _, res := range p.Match.Resources {
			if !res.SubresourcesOnly {
				kinds = append(kinds, kindName(res))
			}
			for _, s := range res.Subresources {
				kinds = append(kinds, res.Kind+"/"+s)
			}
		}
	}
	ops := make([]kyvernov1.AdmissionOperation, len(p.Match.Operations))
	for i, o := range p.Match.Operations {
		ops[i] = kyvernov1.AdmissionOperation(o)
	}
	return kyvernov1.MatchResources{Any: kyvernov1.ResourceFilters{{ResourceDescription: kyvernov1.ResourceDescription{
		Kinds: kinds, Namespaces: namespaces, Operations: ops,
	}}}}
}

func kindName(r ir.Resource) string {
	if r.Group == "" {
		return r.Kind
	}
	return r.Group + "/" + r.Version + "/" + r.Kind
}

func failureAction(p *ir.Policy) *kyvernov1.ValidationFailureAction {
	a := kyvernov1.Audit
	if p.HasAction(ir.Deny) {
		a = kyvernov1.Enforce
	}
	return &a
}

func celValidation(p *ir.Policy) *kyvernov1.Validation {
	cel := &kyvernov1.CEL{
		Expressions:      backends.Validations(p.Validations),
		AuditAnnotations: backends.AuditAnnotations(p.AuditAnnotations),
		Variables:        backends.Variables(p.Variables),
	}
	if p.ParamKind != nil {
		cel.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: p.ParamKind.APIVersion, Kind: p.ParamKind.Kind}
		cel.ParamRef = backends.ParamRef(p.ParamRef)
	}
	return &kyvernov1.Validation{FailureAction: failureAction(p), CEL: cel}
}

func raw(v any) *apiextv1.JSON {
	data, _ := json.Marshal(v)
	return &apiextv1.JSON{Raw: data}
}

// patternValidation writes the check the way kyverno-policies.yaml in the
// design document does: =(field) means "if present", ?* means non-empty.
func patternValidation(p *ir.Policy) *kyvernov1.Validation {
	v := &kyvernov1.Validation{FailureAction: failureAction(p), Message: p.Validations[0].Message}
	switch p.Type {
	case "memory-limit":
		limit := []any{map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "?*"}}}}
		v.RawPattern = raw(map[string]any{"spec": map[string]any{"containers": limit, "=(initContainers)": limit}})
	case "required-labels":
		labels := map[string]any{}
		for _, l := range p.Parameters.Labels {
			labels[l] = "*"
		}
		v.RawPattern = raw(map[string]any{"metadata": map[string]any{"labels": labels}})
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// mutation writes the built-in mutations as Kyverno patches: add-labels as a
// strategic merge, default-requests as a foreach over the container lists
// whose +(key) anchors add a request only where there is none, taking the
// limit when one is set (as Pod defaulting does).
func mutation(p *ir.Policy) *kyvernov1.Mutation {
	if p.Type == "add-labels" {
		labels := map[string]any{}
		for k, v := range p.Parameters.SetLabels {
			labels[k] = v
		}
		return &kyvernov1.Mutation{RawPatchStrategicMerge: raw(map[string]any{"metadata": map[string]any{"labels": labels}})}
	}
	var foreach []kyvernov1.ForEachMutation
	for _, list := range []string{"containers", "initContainers"} {
		requests := map[string]any{}
		for k, v := range p.Parameters.Requests {
			requests["+("+k+")"] = fmt.Sprintf("{{ element.resources.limits.%s || '%s' }}", k, v)
		}
		patch := map[string]any{"spec": map[string]any{list: []any{map[string]any{
			"(name)": "{{ element.name }}", "resources": map[string]any{"requests": requests},
		}}}}
		anyPatch := &kyverno.Any{}
		anyPatch.Value = patch
		foreach = append(foreach, kyvernov1.ForEachMutation{
			List:                   "request.object.spec." + list + " || `[]`",
			RawPatchStrategicMerge: anyPatch,
		})
	}
	return &kyvernov1.Mutation{ForEachMutation: foreach}
}
