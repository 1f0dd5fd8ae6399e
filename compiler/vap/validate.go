package vap

import (
	"regexp"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissionregistrationinstall "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	"k8s.io/kubernetes/pkg/apis/admissionregistration/validation"

	"github.com/admitc/admitc/compiler/source"
	"github.com/admitc/admitc/internal/diag"
)

// scheme holds the group's versioned and internal types with kube-apiserver's
// defaulters and conversions.
var scheme = runtime.NewScheme()

func init() { admissionregistrationinstall.Install(scheme) }

// validate checks a decoded object as kube-apiserver checks a create of it:
// defaulted by its version's defaulters, converted to the internal version
// and validated by pkg/apis/admissionregistration/validation (what the
// registry strategies call). CEL compilation errors are left to admitc's
// own check, which compiles every expression with the same upstream
// compiler for the --kube-version of the output and points into the
// expression.
func validate(doc *source.Doc, obj runtime.Object, kind string) diag.Diagnostics {
	versioned := obj.DeepCopyObject()
	scheme.Default(versioned)
	internal, err := scheme.New(admissionregistration.SchemeGroupVersion.WithKind(kind))
	if err != nil {
		return diag.Diagnostics{{Origin: doc.Origin(doc.Root, "kind"), Message: err.Error()}}
	}
	if err := scheme.Convert(versioned, internal, nil); err != nil {
		return diag.Diagnostics{{Origin: doc.Origin(doc.Root, ""), Message: "convert to the internal version: " + err.Error()}}
	}
	var errs field.ErrorList
	switch o := internal.(type) {
	case *admissionregistration.ValidatingAdmissionPolicy:
		errs = validation.ValidateValidatingAdmissionPolicy(o)
	case *admissionregistration.ValidatingAdmissionPolicyBinding:
		errs = validation.ValidateValidatingAdmissionPolicyBinding(o)
	case *admissionregistration.MutatingAdmissionPolicy:
		errs = validation.ValidateMutatingAdmissionPolicy(o)
	case *admissionregistration.MutatingAdmissionPolicyBinding:
		errs = validation.ValidateMutatingAdmissionPolicyBinding(o)
	}
	return doc.FieldErrors(withoutCELCompilation(errs), source.Refusal{By: "kube-apiserver refuses this " + kind, Fixes: fixes})
}

// celExpression matches the field paths of the expressions admitc
// type-checks itself.
var celExpression = regexp.MustCompile(`^spec\.(variables\[\d+\]\.expression|matchConditions\[\d+\]\.expression|validations\[\d+\]\.(expression|messageExpression)|auditAnnotations\[\d+\]\.valueExpression|mutations\[\d+\]\.(jsonPatch|applyConfiguration)\.expression)$`)

// withoutCELCompilation drops the errors of compiling an expression (the
// validation reports them as Invalid, or Internal): admitc's check reports
// each at its place in the expression. A missing or blank expression is
// kept.
func withoutCELCompilation(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		compiled := e.Type == field.ErrorTypeInternal || (e.Type == field.ErrorTypeInvalid && e.Detail != "must be non-empty if specified")
		if compiled && celExpression.MatchString(e.Field) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// fixes is the advice for the fields whose upstream message does not say
// what to write.
var fixes = map[string]string{
	"spec.validationActions":                       "say [Deny] to enforce, or [Warn, Audit] to roll out",
	"spec.paramRef":                                "name one parameter object (name) or select several (selector)",
	"spec.paramRef.name":                           "keep name to use one parameter object, or selector to use every object it selects",
	"spec.paramRef.selector":                       "keep name to use one parameter object, or selector to use every object it selects",
	"spec.paramRef.parameterNotFoundAction":        "say Deny (a request is denied when no parameter object is found) or Allow (the binding does nothing then)",
	"spec.policyName":                              "name the policy this binding binds",
	"spec.matchConstraints":                        "a policy without it matches nothing",
	"spec.matchConstraints.resourceRules":          "a policy needs at least one resource rule: it gives its expressions the type of the object",
	"spec.validations":                             "a ValidatingAdmissionPolicy needs validations or auditAnnotations",
	"spec.auditAnnotations":                        "a ValidatingAdmissionPolicy needs validations or auditAnnotations",
	"metadata.name":                                "name the object: lowercase letters, digits, '-' and '.'",
	"spec.mutations[*].patchType":                  "say JSONPatch or ApplyConfiguration, with its matching field",
	"spec.mutations[*].jsonPatch":                  "a patchType JSONPatch mutation takes jsonPatch.expression, not applyConfiguration",
	"spec.mutations[*].applyConfiguration":         "a patchType ApplyConfiguration mutation takes applyConfiguration.expression, not jsonPatch",
	"spec.validationActions[*]":                    "write Deny, Warn or Audit, capitalised, each once",
	"spec.matchResources.resourceRules.operations": "a MutatingAdmissionPolicyBinding can only match CREATE and UPDATE",
}
