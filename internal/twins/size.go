package twins

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// CELSize is the number of characters of CEL in the
// ValidatingAdmissionPolicies of a rendered vap file: every validation's
// expression and messageExpression, variable, match condition and audit
// annotation's valueExpression, summed over all policies (autogen ones
// included). Bindings hold no CEL. A run of whitespace counts as one
// character, so how an expression is folded in YAML does not count.
func CELSize(vapYAML []byte) (int, error) {
	policies, err := decodePolicies(vapYAML)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range policies {
		for _, e := range expressions(&p.Spec) {
			n += utf8.RuneCountInString(strings.Join(strings.Fields(e), " "))
		}
	}
	return n, nil
}

// expressions are every CEL expression of a policy spec.
func expressions(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) []string {
	var out []string
	for _, v := range s.Validations {
		out = append(out, v.Expression, v.MessageExpression)
	}
	for _, v := range s.Variables {
		out = append(out, v.Expression)
	}
	for _, m := range s.MatchConditions {
		out = append(out, m.Expression)
	}
	for _, a := range s.AuditAnnotations {
		out = append(out, a.ValueExpression)
	}
	return out
}

// decodePolicies reads the ValidatingAdmissionPolicies of a multi-document
// YAML file, skipping its other objects.
func decodePolicies(data []byte) ([]admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []admissionregistrationv1.ValidatingAdmissionPolicy
	for {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode vap output: %w", err)
		}
		if p.Kind == "ValidatingAdmissionPolicy" {
			out = append(out, p)
		}
	}
}
