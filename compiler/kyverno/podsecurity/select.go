package podsecurity

import (
	"fmt"
	"strconv"
	"strings"
)

// Check is one check of the fork's policy.DefaultChecks(), in its order.
type Check struct {
	// ID is the check's ID (policy.CheckID).
	ID string
	// Restricted says the check is of the restricted level (else baseline).
	Restricted bool
	// Versions are the check's versions, by increasing minimum version.
	Versions []Version
	// reason is the check's ForbiddenReason over its records (a CEL
	// string); static but for appArmorProfile.
	reason func(recs string) string
}

// Version is one VersionedCheck: the minimum policy version (1.Minor),
// the CEL records of the check over a view, and its typed verdict.
type Version struct {
	Minor   int
	Records func(r recorder, view string) string
	// Fails is the typed verdict (fails.go): true when Records are not
	// empty, on a pod its schema's shape.
	Fails func(*TypedPod) string
}

// readsRecords says the check's reason reads its records (their raw
// values), not only a constant.
func (c Check) readsRecords() bool { return c.reason("a") != c.reason("b") }

func static(reason string) func(string) string { return func(string) string { return q(reason) } }

// Checks are the fork's DefaultChecks, in registration order (the file
// names of policy/check_*.go, sorted).
var Checks = []Check{
	{"allowPrivilegeEscalation", true, []Version{{8, allowPrivilegeEscalation, allowPrivilegeEscalationFails}, {25, allowPrivilegeEscalation125, notWindows(allowPrivilegeEscalationFails)}}, static("allowPrivilegeEscalation != false")},
	{"appArmorProfile", false, []Version{{0, appArmorProfile, appArmorProfileFails}}, appArmorReason},
	{"capabilities_baseline", false, []Version{{0, capabilitiesBaseline, capabilitiesBaselineFails}}, static("non-default capabilities")},
	{"capabilities_restricted", true, []Version{{22, capabilitiesRestricted, capabilitiesRestrictedFails}, {25, capabilitiesRestricted125, notWindows(capabilitiesRestrictedFails)}}, static("unrestricted capabilities")},
	{"hostNamespaces", false, []Version{{0, hostNamespaces, hostNamespacesFails}}, static("host namespaces")},
	{"hostPathVolumes", false, []Version{{0, hostPathVolumes, hostPathVolumesFails}}, static("hostPath volumes")},
	{"hostPorts", false, []Version{{0, hostPorts, hostPortsFails}}, static("hostPort")},
	{"hostProbesAndHostLifecycle", false, []Version{{34, hostProbesAndHostLifecycle, hostProbesAndHostLifecycleFails}}, static("probe or lifecycle host")},
	{"privileged", false, []Version{{0, privileged, privilegedFails}}, static("privileged")},
	{"procMount", false, []Version{{0, procMount, procMountFails}}, static("procMount")},
	{"restrictedVolumes", true, []Version{{0, restrictedVolumes, restrictedVolumesFails}}, static("restricted volume types")},
	{"runAsNonRoot", true, []Version{{0, runAsNonRoot, runAsNonRootFails}}, static("runAsNonRoot != true")},
	{"runAsUser", true, []Version{{23, runAsUser, runAsUserFails}}, static("runAsUser=0")},
	{"seLinuxOptions", false, []Version{{0, seLinux(seLinuxTypes), seLinuxFails(seLinuxTypes)}, {31, seLinux(seLinuxTypes131), seLinuxFails(seLinuxTypes131)}}, static("seLinuxOptions")},
	{"seccompProfile_baseline", false, []Version{{0, nil, nil}, {19, seccompBaseline, seccompBaselineFails}}, static("seccompProfile")},
	{"seccompProfile_restricted", true, []Version{{19, seccompRestricted, seccompRestrictedFails}, {25, seccompRestricted125, notWindows(seccompRestrictedFails)}}, static("seccompProfile")},
	{"sysctls", false, []Version{{0, sysctls(sysctls10), sysctlsFails(sysctls10)}, {27, sysctls(sysctls127), sysctlsFails(sysctls127)}, {29, sysctls(sysctls129), sysctlsFails(sysctls129)}, {32, sysctls(sysctls132), sysctlsFails(sysctls132)}}, static("forbidden sysctls")},
	{"windowsHostProcess", false, []Version{{0, windowsHostProcess, windowsHostProcessFails}}, static("hostProcess")},
}

// Latest is the minor version a `latest` (or empty) version stands for
// in Kyverno's evaluatePSS: it picks every check's last version.
const Latest = 1 << 30

// Versions are the policy versions admitc claims: those Kyverno's CRD
// accepts (v1.19 to v1.32, and latest).
const (
	MinMinor = 19
	MaxMinor = 32
)

// Levels admitc claims: Kyverno's CRD enum. Kyverno's evaluatePSS runs only
// the baseline checks at baseline and every check at any other level, so
// privileged decides as restricted does.
var Levels = []string{"baseline", "restricted", "privileged"}

// ParseVersion is the minor version of a podSecurity version, or an error
// for a version admitc does not claim.
func ParseVersion(version string) (int, error) {
	if version == "" || version == "latest" {
		return Latest, nil
	}
	minor, err := strconv.Atoi(strings.TrimPrefix(version, "v1."))
	if !strings.HasPrefix(version, "v1.") || err != nil || strconv.Itoa(minor) != strings.TrimPrefix(version, "v1.") || minor < MinMinor || minor > MaxMinor {
		return 0, fmt.Errorf("version %q is not one Kyverno's CRD accepts (v1.%d to v1.%d, or latest), so admitc does not claim to reproduce it", version, MinMinor, MaxMinor)
	}
	return minor, nil
}

// Selected is the version of c that Kyverno's evaluatePSS runs at minor:
// the last whose minimum is not above minor, or the first when every
// minimum is (Kyverno runs a check even below its minimum version).
func (c Check) Selected(minor int) Version {
	sel := c.Versions[0]
	for _, v := range c.Versions[1:] {
		if v.Minor <= minor && sel.Minor < v.Minor {
			sel = v
		}
	}
	return sel
}

// Evaluated are the checks Kyverno's evaluatePSS runs at level.
func Evaluated(level string) []Check {
	var out []Check
	for _, c := range Checks {
		if level == "baseline" && c.Restricted {
			continue
		}
		out = append(out, c)
	}
	return out
}
