package ir

// What the IR keeps of another engine's policy when one source policy
// becomes several IR policies (a Kyverno ClusterPolicy is one IR policy per
// rule, plus one per autogen rule), and what the compiler could not read.

// PolicyRef names the policy, and rule, of another engine an imported IR
// policy was read from, so test runners and translators can report in that
// engine's names.
type PolicyRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Rule is the rule's name as the engine reports it (autogen-NAME for a
	// generated rule); empty for kinds without rules.
	Rule string `json:"rule,omitempty"`
	// AutogenOf names the rule (or, for kinds without rules, the policy) a
	// policy generated for pod controllers was generated from.
	AutogenOf string `json:"autogenOf,omitempty"`
	// ParamsContext names the rule's configMap context entry that the
	// policy reads as params (its binding's paramRef names the ConfigMap).
	ParamsContext string `json:"paramsContext,omitempty"`
	// Severity and Category are the policy's annotations
	// policies.kyverno.io/severity and policies.kyverno.io/category, as
	// written, for reports of the policy's results (admitc audit's
	// openreports.io Reports carry them as Kyverno's reports do).
	Severity string `json:"severity,omitempty"`
	Category string `json:"category,omitempty"`
}

// Annotations of a Kyverno policy that reports of its results carry.
const (
	// SeverityAnnotation rates a policy's results: critical, high, medium,
	// low or info.
	SeverityAnnotation = "policies.kyverno.io/severity"
	// CategoryAnnotation groups policies (Pod Security Standards
	// (Baseline), Best Practices, ...).
	CategoryAnnotation = "policies.kyverno.io/category"
)

// Skipped is a policy or rule the compiler read but could not emit, because
// it needs something admitc cannot evaluate (compile --keep-going).
type Skipped struct {
	Origin Origin    `json:"origin"`
	From   PolicyRef `json:"from"`
	// Feature names what admitc cannot evaluate (for example "context.apiCall").
	Feature string `json:"feature"`
	// Reason says why.
	Reason string `json:"reason"`
}
