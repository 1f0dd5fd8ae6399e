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
		"version outside the CRD":  {"        level: baseline\n        version: v1.18\n", `p.yaml:17:18: spec.rules[0].validate.podSecurity.version: validate.podSecurity: version "v1.18" is not one Kyverno's CRD accepts (v1.19 to v1.32, or latest), so admitc does not claim to reproduce it`},
		"level outside the CRD":    {"        level: strict\n", `p.yaml:16:16: spec.rules[0].validate.podSecurity.level: validate.podSecurity: level "strict" is not one Kyverno's CRD accepts (privileged, baseline, restricted)`},
		"control outside the CRD":  {"        level: baseline\n        exclude:\n        - controlName: Everything\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: validate.podSecurity: control "Everything" is not one Kyverno's CRD accepts`},
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

// The podSecurity blocks Kyverno's own validation refuses are errors, as
// Kyverno never runs such a policy.
func TestPodSecurityKyvernoRefusals(t *testing.T) {
	cases := map[string]struct{ podSecurity, want string }{
		"container control without images": {"        level: restricted\n        exclude:\n        - controlName: Capabilities\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Kyverno refuses this policy: spec.rules[0].validate.podSecurity.exclude[0].controlName: exclude.images must be specified for the container level control`},
		"pod control with images":          {"        level: baseline\n        exclude:\n        - controlName: Sysctls\n          images: [nginx]\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Kyverno refuses this policy: spec.rules[0].validate.podSecurity.exclude[0].controlName: exclude.images must not be specified for the pod level control`},
		"restrictedField without values":   {"        level: baseline\n        exclude:\n        - controlName: HostProcess\n          restrictedField: spec.securityContext.windowsOptions.hostProcess\n", `p.yaml:1:1: spec.rules[0].validate.podSecurity.exclude[0].values: Kyverno refuses this policy: spec.rules[0].validate.podSecurity.exclude[0].values: values is required`},
		"restricted control at baseline":   {"        level: baseline\n        exclude:\n        - controlName: Volume Types\n", `p.yaml:18:24: spec.rules[0].validate.podSecurity.exclude[0].controlName: Kyverno refuses this policy: spec.rules[0].validate.podSecurity.exclude[0].controlName: Invalid control name defined at the given level`},
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
