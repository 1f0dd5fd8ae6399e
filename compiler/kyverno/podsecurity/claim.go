package podsecurity

import (
	"fmt"
	"slices"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
)

// ControlChecks is Kyverno's PSS_control_name_to_ids (pkg/pss/utils):
// the checks an exclude's controlName exempts.
var ControlChecks = map[string][]string{
	"Capabilities":             {"capabilities_baseline", "capabilities_restricted"},
	"Seccomp":                  {"seccompProfile_baseline", "seccompProfile_restricted"},
	"Privileged Containers":    {"privileged"},
	"Host Ports":               {"hostPorts"},
	"/proc Mount Type":         {"procMount"},
	"HostProcess":              {"windowsHostProcess"},
	"SELinux":                  {"seLinuxOptions"},
	"Host Namespaces":          {"hostNamespaces"},
	"HostPath Volumes":         {"hostPathVolumes"},
	"Sysctls":                  {"sysctls"},
	"AppArmor":                 {"appArmorProfile"},
	"Privilege Escalation":     {"allowPrivilegeEscalation"},
	"Running as Non-root":      {"runAsNonRoot"},
	"Running as Non-root user": {"runAsUser"},
	"Volume Types":             {"restrictedVolumes"},
}

// Kyverno's lists of controls (pkg/pss/utils/mapping.go), which its policy
// validation (PodSecurityStandard.Validate, Rule.ValidatePSaControlNames)
// reads.
var ()

// fakeContainerControls are the controls whose checks report the fake
// container of an exclusion without images (it sets nothing, so the
// restricted runAsNonRoot and seccompProfile checks require it).
var fakeContainerControls = []string{"Running as Non-root", "Seccomp"}

// Claimed says why admitc does not reproduce ps, or nil: a level or
// version outside Kyverno's CRD, a control name outside it, or exclusions
// with and without images on a control whose fake container Kyverno
// matches against the pod's containers.
func Claimed(ps *kyvernov1.PodSecurity) error {
	if !slices.Contains(Levels, string(ps.Level)) {
		return &Error{"level", fmt.Sprintf("level %q is not one Kyverno's CRD accepts (privileged, baseline, restricted)", ps.Level)}
	}
	if _, err := ParseVersion(ps.Version); err != nil {
		return &Error{"version", err.Error()}
	}
	withImages, without := map[string]bool{}, map[string]bool{}
	for i, x := range ps.Exclude {
		if _, ok := ControlChecks[x.ControlName]; !ok {
			return &Error{fmt.Sprintf("exclude[%d].controlName", i), fmt.Sprintf("control %q is not one Kyverno's CRD accepts", x.ControlName)}
		}
		if len(x.Images) > 0 {
			withImages[x.ControlName] = true
		} else {
			without[x.ControlName] = true
		}
		if slices.Contains(fakeContainerControls, x.ControlName) && withImages[x.ControlName] && without[x.ControlName] {
			return &Error{fmt.Sprintf("exclude[%d]", i), fmt.Sprintf("exclusions of %q both with and without images are not translated: Kyverno's exclusion without images removes the first container error it finds for its fake container, which interleaves with the exclusions by image in an order admitc does not reproduce", x.ControlName)}
		}
	}
	return nil
}
