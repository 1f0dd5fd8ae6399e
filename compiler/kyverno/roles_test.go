package kyverno_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/runtime"
)

// A rule's roles and clusterRoles are Kyverno's resolution of the user's
// RoleBindings at admission: refused where admitc has no roles, decided
// as kyverno test decides them for the roles it is given (a userinfo file,
// in admitc verify): a filter's list holds one of the user's.
func TestRolesAreDecidedForTheGivenUser(t *testing.T) {
	policy := strings.Replace(podRule(`    exclude:
      any:
      - clusterRoles: [cluster-admin]
      - roles: ["ops:deployer"]
        clusterRoles: [edit]
    validate:
      failureAction: Enforce
      message: no privileged containers
      pattern:
        spec:
          containers:
          - =(securityContext):
              =(privileged): false
`), "spec:\n  rules:", "spec:\n  background: false\n  rules:", 1)
	set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(policy)}}, compiler.Options{KeepGoing: true})
	require.Empty(t, diags)
	require.Len(t, set.Skipped, 1)
	assert.Equal(t, "roles and clusterRoles", set.Skipped[0].Feature)
	assert.Contains(t, set.Skipped[0].Reason, "admitc verify decides roles for a Kyverno test's userinfo file")

	for name, tc := range map[string]struct {
		roles    kyverno.UserRoles
		excluded bool
	}{
		"no roles":                       {kyverno.UserRoles{}, false},
		"cluster-admin":                  {kyverno.UserRoles{ClusterRoles: []string{"view", "cluster-admin"}}, true},
		"deployer without edit":          {kyverno.UserRoles{Roles: []string{"ops:deployer"}}, false},
		"deployer with edit":             {kyverno.UserRoles{Roles: []string{"ops:deployer"}, ClusterRoles: []string{"edit"}}, true},
		"a role of another namespace":    {kyverno.UserRoles{Roles: []string{"dev:deployer"}, ClusterRoles: []string{"edit"}}, false},
		"a cluster role named as a role": {kyverno.UserRoles{Roles: []string{"cluster-admin"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			roles := tc.roles
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(policy)}}, compiler.Options{KeepGoing: true, KyvernoRoles: &roles})
			require.Empty(t, diags)
			require.Empty(t, set.Skipped)
			e, err := runtime.NewEngine(set)
			require.NoError(t, err)
			res, err := e.Admit(context.Background(), runtime.RequestFor(pod(t, `{containers: [{name: a, image: "a:1", securityContext: {privileged: true}}]}`), nil, "default"))
			require.NoError(t, err)
			assert.Equal(t, tc.excluded, res.Allowed())
		})
	}
}
