package kyverno_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler"
)

// Each podSecurity setting admitc does not reproduce is refused at its
// place, with the reason; the rest of the file still compiles.
func TestPodSecurityRefusals(t *testing.T) {
	cases := map[string]struct{ podSecurity, want string }{
		"mixed Seccomp exclusions": {"        level: restricted\n        exclude:\n        - controlName: Seccomp\n          images: [nginx*]\n        - controlName: Seccomp\n", `p.yaml:20:11: spec.rules[0].validate.podSecurity.exclude[1]: validate.podSecurity: exclusions of "Seccomp" both with and without images are not translated: Kyverno's exclusion without images removes the first container error it finds for its fake container, which interleaves with the exclusions by image in an order admitc does not reproduce`},
		"empty block":              {"        {}\n", `p.yaml:16:9: spec.rules[0].validate.podSecurity: validate.podSecurity: an empty podSecurity block is not a podSecurity rule to Kyverno's engine (it runs the rule's other validate settings); give a level`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := podRule("    validate:\n      podSecurity:\n" + tc.podSecurity)
			set, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{KeepGoing: true})
			require.Empty(t, diags)
			require.Len(t, set.Skipped, 1)
			sk := set.Skipped[0]
			assert.Equal(t, tc.want, fmt.Sprintf("%s:%d:%d: %s: %s: %s", sk.Origin.File, sk.Origin.Line, sk.Origin.Column, sk.Origin.Path, sk.Feature, sk.Reason))
			assert.Empty(t, set.Policies)
		})
	}
}

// The podSecurity blocks Kyverno's CRD schema or its own validation
// refuses are errors, as the cluster never runs such a policy.
func TestPodSecurityKyvernoRefusals(t *testing.T) {
	cases := map[string]struct{ podSecurity, want string }{
		"version outside the CRD":          {"        level: baseline\n        version: v1.18\n", `p.yaml:17:18: spec.rules[0].validate.podSecurity.version: Unsupported value: "v1.18": supported values: "v1.19", "v1.20", "v1.21", "v1.22", "v1.23", "v1.24", "v1.25", "v1.26", "v1.27", "v1.28", "v1.29", "v1.30", "v1.31", "v1.32", "latest" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; write one of the supported values, spelled as shown: case matters)`},
		"level outside the CRD":            {"        level: strict\n", `p.yaml:16:16: spec.rules[0].validate.podSecurity.level: Unsupported value: "strict": supported values: "privileged", "baseline", "restricted" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; write one of the supported values, spelled as shown: case matters)`},
		"control outside the CRD":          {"        level: baseline\n        exclude:\n        - controlName: Everything\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Unsupported value: "Everything": supported values: "HostProcess", "Host Namespaces", "Privileged Containers", "Capabilities", "HostPath Volumes", "Host Ports", "AppArmor", "SELinux", "/proc Mount Type", "Seccomp", "Sysctls", "Volume Types", "Privilege Escalation", "Running as Non-root", "Running as Non-root user" (the API server refuses this ClusterPolicy by Kyverno's CRD schema; write one of the supported values, spelled as shown: case matters)`},
		"container control without images": {"        level: restricted\n        exclude:\n        - controlName: Capabilities\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Invalid value: "Capabilities": exclude.images must be specified for the container level control (Kyverno's webhook refuses this ClusterPolicy)`},
		"pod control with images":          {"        level: baseline\n        exclude:\n        - controlName: Sysctls\n          images: [nginx]\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Invalid value: "Sysctls": exclude.images must not be specified for the pod level control (Kyverno's webhook refuses this ClusterPolicy)`},
		"restrictedField without values":   {"        level: baseline\n        exclude:\n        - controlName: HostProcess\n          restrictedField: spec.securityContext.windowsOptions.hostProcess\n", `p.yaml:18:11: spec.rules[0].validate.podSecurity.exclude[0].values: Forbidden: values is required (Kyverno's webhook refuses this ClusterPolicy)`},
		"restricted control at baseline":   {"        level: baseline\n        exclude:\n        - controlName: Volume Types\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Invalid value: "Volume Types": Invalid control name defined at the given level (Kyverno's webhook refuses this ClusterPolicy)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := podRule("    validate:\n      podSecurity:\n" + tc.podSecurity)
			_, diags := compiler.Compile([]compiler.Source{{Name: "p.yaml", Data: []byte(src)}}, compiler.Options{KeepGoing: true})
			require.Len(t, diags, 1)
			assert.Equal(t, tc.want, diags[0].String())
		})
	}
}
