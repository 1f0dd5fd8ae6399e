package gatekeeper

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gatekeeper's ConstraintTemplate and Constraint types live in the
// open-policy-agent/frameworks module, which admitc does not depend on;
// these are strict local copies with the same JSON field names, holding
// what this frontend reads (a field they lack is refused at its place).

type constraintTemplate struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       templateSpec      `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

type templateSpec struct {
	CRD     templateCRD      `json:"crd"`
	Targets []templateTarget `json:"targets"`
}

type templateCRD struct {
	Spec struct {
		Names struct {
			Kind       string   `json:"kind"`
			ShortNames []string `json:"shortNames,omitempty"`
		} `json:"names"`
		Validation *struct {
			OpenAPIV3Schema any   `json:"openAPIV3Schema,omitempty"`
			LegacySchema    *bool `json:"legacySchema,omitempty"`
		} `json:"validation,omitempty"`
	} `json:"spec"`
}

type templateTarget struct {
	Target     string   `json:"target"`
	Rego       string   `json:"rego,omitempty"`
	Libs       []string `json:"libs,omitempty"`
	Code       []code   `json:"code,omitempty"`
	Operations []string `json:"operations,omitempty"`
}

// code is one engine's source; Source's schema depends on Engine.
type code struct {
	Engine string `json:"engine"`
	Source any    `json:"source"`
}

// celSource is the source of a K8sNativeValidation code entry.
type celSource struct {
	Variables       []namedExpression `json:"variables,omitempty"`
	Validations     []celValidation   `json:"validations,omitempty"`
	MatchConditions []namedExpression `json:"matchCondition,omitempty"`
	FailurePolicy   *string           `json:"failurePolicy,omitempty"`
	GenerateVAP     *bool             `json:"generateVAP,omitempty"`
}

type namedExpression struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

type celValidation struct {
	Expression        string `json:"expression"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
}

type constraintObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       constraintSpec    `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

type constraintSpec struct {
	Match                    *match         `json:"match,omitempty"`
	Parameters               any            `json:"parameters,omitempty"`
	EnforcementAction        string         `json:"enforcementAction,omitempty"`
	ScopedEnforcementActions []scopedAction `json:"scopedEnforcementActions,omitempty"`
}

// match is Gatekeeper's match.Match.
type match struct {
	Source             string                `json:"source,omitempty"`
	Kinds              []matchKinds          `json:"kinds,omitempty"`
	Scope              string                `json:"scope,omitempty"`
	Namespaces         []string              `json:"namespaces,omitempty"`
	ExcludedNamespaces []string              `json:"excludedNamespaces,omitempty"`
	LabelSelector      *metav1.LabelSelector `json:"labelSelector,omitempty"`
	NamespaceSelector  *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Name               string                `json:"name,omitempty"`
}

type matchKinds struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
}

type scopedAction struct {
	Action            string `json:"action"`
	EnforcementPoints []struct {
		Name string `json:"name"`
	} `json:"enforcementPoints,omitempty"`
}
