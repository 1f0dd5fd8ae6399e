package main

import (
	"os"
	"path/filepath"
)

// policySource is where the policies come from.
const policySource = "examples/kyverno-pattern"

// loadPolicies are the Pod Security and best-practice ClusterPolicies the
// load runs: every Pod policy of examples/kyverno-pattern that reads no
// context (ConfigMaps, API calls), so the Kyverno CLI runs them offline too.
var loadPolicies = []string{
	"deny-automount-sa-token", "deny-default-namespace", "deny-image-registries", "deny-latest-tag",
	"disallow-capabilities", "disallow-capabilities-strict-foreach", "disallow-host-namespaces", "disallow-host-path",
	"disallow-host-ports", "disallow-host-process", "disallow-latest-tag", "disallow-latest-tag-foreach",
	"disallow-latest-tag-images", "disallow-privilege-escalation", "disallow-privileged-containers", "disallow-proc-mount",
	"disallow-selinux", "podsecurity-baseline", "podsecurity-restricted-exclude", "require-container-port-names",
	"require-labels", "require-non-root-groups-foreach", "require-probe-alignment", "require-probes",
	"require-pull-always-for-latest", "require-pull-always-for-latest-foreach", "require-requests-limits", "require-ro-rootfs",
	"require-run-as-non-root-user", "require-run-as-nonroot", "restrict-apparmor-profiles", "restrict-capabilities-strict",
	"restrict-host-network-ports", "restrict-image-registries", "restrict-image-registries-foreach", "restrict-image-registries-images",
	"restrict-port-ranges", "restrict-seccomp", "restrict-seccomp-strict", "restrict-sysctls",
}

// policyDir copies the policies into one directory under work (kyverno
// apply and admitc audit read the same files).
func policyDir(work string) (string, error) {
	dir := filepath.Join(work, "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, p := range loadPolicies {
		data, err := os.ReadFile(filepath.Join(policySource, p, "policy.yaml"))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, p+".yaml"), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func countPolicies(string) int { return len(loadPolicies) }
