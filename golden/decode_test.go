package golden

import (
	"bytes"
	"fmt"

	kpolv1 "github.com/kyverno/api/api/policies.kyverno.io/v1"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"
)

// typed returns an empty typed object for apiVersion/kind.
func typed(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}, nil
	case "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, nil
	case "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy":
		return &admissionregistrationv1.MutatingAdmissionPolicy{}, nil
	case "admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding":
		return &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, nil
	case "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy":
		return &admissionregistrationv1beta1.MutatingAdmissionPolicy{}, nil
	case "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicyBinding":
		return &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{}, nil
	case "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration":
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}, nil
	case "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration":
		return &admissionregistrationv1.MutatingWebhookConfiguration{}, nil
	case "apiserver.config.k8s.io/v1/AdmissionConfiguration":
		return &apiserverv1.AdmissionConfiguration{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}, nil
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}, nil
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}, nil
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "kyverno.io/v1/ClusterPolicy":
		return &kyvernov1.ClusterPolicy{}, nil
	case "policies.kyverno.io/v1/ValidatingPolicy":
		return &kpolv1.ValidatingPolicy{}, nil
	case "policies.kyverno.io/v1/MutatingPolicy":
		return &kpolv1.MutatingPolicy{}, nil
	}
	return nil, fmt.Errorf("unexpected object %s %s", apiVersion, kind)
}

// decodeStrict decodes every document into its typed object, failing on
// unknown or duplicate fields, checks label selectors the way the API
// server's validation does, and refuses a status block.
func decodeStrict(stream []byte) error {
	for i, doc := range bytes.Split(stream, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		obj, err := typed(meta.APIVersion, meta.Kind)
		if err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("document %d (%s): %w", i, meta.Kind, err)
		}
		if err := checkSelectors(obj); err != nil {
			return fmt.Errorf("document %d (%s): %w", i, meta.Kind, err)
		}
		if err := checkNoStatus(doc); err != nil {
			return fmt.Errorf("document %d (%s): %w", i, meta.Kind, err)
		}
	}
	return nil
}

func checkSelectors(obj any) error {
	var sels []*metav1.LabelSelector
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		if o.Spec.MatchResources != nil { // an imported binding may have none
			sels = append(sels, o.Spec.MatchResources.NamespaceSelector)
		}
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		if o.Spec.MatchResources != nil {
			sels = append(sels, o.Spec.MatchResources.NamespaceSelector)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			sels = append(sels, w.NamespaceSelector, w.ObjectSelector)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			sels = append(sels, w.NamespaceSelector, w.ObjectSelector)
		}
	}
	for _, s := range sels {
		if errs := metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("selector")); len(errs) > 0 {
			return errs.ToAggregate()
		}
	}
	return nil
}

// checkNoStatus refuses a document with a status: status is the cluster's to
// write, and a manifest that carries one (even `status: {}` or a Service's
// empty loadBalancer) is noise in every diff and apply.
func checkNoStatus(doc []byte) error {
	var fields map[string]any
	if err := yaml.Unmarshal(doc, &fields); err != nil {
		return err
	}
	if _, ok := fields["status"]; ok {
		return fmt.Errorf("has a status block; generated objects must not carry one")
	}
	return nil
}
