package upstream

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/runtime"
)

// Parse decodes generated VAP/MAP YAML (every other kind is refused) into
// typed objects, strictly.
func Parse(name string, stream []byte) (Objects, error) {
	var out Objects
	ms, err := runtime.DecodeManifests(name, stream)
	if err != nil {
		return out, err
	}
	for _, m := range ms {
		data, err := m.Object.MarshalJSON()
		if err != nil {
			return out, err
		}
		var target any
		switch m.Object.GetKind() {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			out.ValidatingPolicies, target = append(out.ValidatingPolicies, p), p
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			out.ValidatingBindings, target = append(out.ValidatingBindings, b), b
		case "MutatingAdmissionPolicy":
			p := &admissionregistrationv1.MutatingAdmissionPolicy{}
			out.MutatingPolicies, target = append(out.MutatingPolicies, p), p
		case "MutatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			out.MutatingBindings, target = append(out.MutatingBindings, b), b
		default:
			return out, fmt.Errorf("%s: %s is not an admission policy object", m.Source, m.Object.GetKind())
		}
		if err := yaml.UnmarshalStrict(data, target); err != nil {
			return out, fmt.Errorf("%s: %w", m.Source, err)
		}
	}
	return out, nil
}
