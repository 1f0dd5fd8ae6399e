package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// Rules that differ only in their resources are written as one, in the
// order each first appears; rules that differ otherwise stay apart.
func TestRulesThatDifferOnlyInResourcesAreMerged(t *testing.T) {
	all, namespaced := admissionregistrationv1.AllScopes, admissionregistrationv1.NamespacedScope
	rule := func(group string, ops []admissionregistrationv1.OperationType, scope *admissionregistrationv1.ScopeType, resources ...string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: resources, Scope: scope}}
	}
	cu := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	c := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	got := mergedRules([]admissionregistrationv1.RuleWithOperations{
		rule("", cu, &all, "pods", "pods/ephemeralcontainers"),
		rule("apps", cu, &all, "deployments"),
		rule("", cu, &all, "pods", "replicationcontrollers"),
		rule("", c, &all, "pods"),
		rule("", cu, &namespaced, "services"),
		rule("apps", cu, &all, "statefulsets", "deployments"),
	})
	assert.Equal(t, []admissionregistrationv1.RuleWithOperations{
		rule("", cu, &all, "pods", "pods/ephemeralcontainers", "replicationcontrollers"),
		rule("apps", cu, &all, "deployments", "statefulsets"),
		rule("", c, &all, "pods"),
		rule("", cu, &namespaced, "services"),
	}, got)
}
