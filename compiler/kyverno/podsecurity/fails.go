package podsecurity

import (
	"slices"
	"strings"
)

// The verdicts below are the typed translation of the checks: for each
// check version, a CEL boolean that is true when the check fails (its
// records in checks.go are not empty), written as a policy author writes
// it. They read the pod as the API server hands it to an admission policy:
// every field of its schema's shape and never null. That is what makes
// them short (c.?securityContext.?privileged.orValue(false) is the whole
// privileged check), and what an object offline must be shown to satisfy
// before they judge it: Reads lists the fields they assumed it of.
// Kyverno's message, with each failing field, still comes from the records,
// in messageExpression, which the API server evaluates only on a failure.

// A TypedPod is the pod a verdict reads: CEL expressions of its spec, its
// metadata and the list of all its containers (init, regular and
// ephemeral, in any order), and the fields the verdicts read of it.
type TypedPod struct {
	Spec, Meta, Containers string
	reads                  []string
}

// Reads are the fields the verdicts written so far read, under "spec.",
// "metadata." or "containers[]." (a field of every container of every
// list), with "[]" for every element of a list; each once, in the order
// first read.
func (p *TypedPod) Reads() []string { return p.reads }

func (p *TypedPod) read(path string) {
	if !slices.Contains(p.reads, path) {
		p.reads = append(p.reads, path)
	}
}

// MessageReads are the fields the records (Kyverno's message, and an
// exclusion's match) read with a type beyond the verdicts' reads: a
// container's name and image, a hostPath volume's path.
var MessageReads = []string{"containers[].name", "containers[].image", "spec.volumes[].hostPath.path"}

// optional is the optional read of the dotted path under base.
func optional(base, path string) string {
	return base + ".?" + strings.ReplaceAll(path, ".", ".?")
}

// spec is the optional read of path under the pod spec.
func (p *TypedPod) spec(path string) string {
	p.read("spec." + path)
	return optional(p.Spec, path)
}

// ctr is the optional read of path under the container c.
func (p *TypedPod) ctr(c, path string) string {
	p.read("containers[]." + path)
	return optional(c, path)
}

// anyContainer is true when pred (over c) holds for a container.
func (p *TypedPod) anyContainer(pred string) string {
	return p.Containers + ".exists(c, " + pred + ")"
}

func or(terms ...string) string { return strings.Join(terms, " || ") }

func inList(x string, values []string) string {
	return x + " in [" + strings.Join(quoteAll(values), ", ") + "]"
}

// notWindows guards a check that Windows pods are exempt from (1.25).
func notWindows(fails func(*TypedPod) string) func(*TypedPod) string {
	return func(p *TypedPod) string {
		return p.spec("os.name") + ".orValue('') != 'windows' && (" + fails(p) + ")"
	}
}

func allowPrivilegeEscalationFails(p *TypedPod) string {
	return p.anyContainer(p.ctr("c", "securityContext.allowPrivilegeEscalation") + ".orValue(true)")
}

var appArmorProfileTypes = []string{"RuntimeDefault", "Localhost"}

func appArmorProfileFails(p *TypedPod) string {
	bad := func(profile string) string {
		return profile + ".hasValue() && !(" + inList(profile+".?type.orValue('')", appArmorProfileTypes) + ")"
	}
	p.read("spec.securityContext.appArmorProfile.type")
	p.read("containers[].securityContext.appArmorProfile.type")
	ann := p.Meta + ".annotations[a]"
	p.read("metadata.annotations[]")
	return or(bad(p.spec("securityContext.appArmorProfile")),
		p.anyContainer(bad(p.ctr("c", "securityContext.appArmorProfile"))),
		optional(p.Meta, "annotations")+".orValue({}).exists(a, a.startsWith('container.apparmor.security.beta.kubernetes.io/') && !("+
			ann+" in ['', 'runtime/default'] || "+ann+".startsWith('localhost/')))")
}

func capabilitiesBaselineFails(p *TypedPod) string {
	p.read("containers[].securityContext.capabilities.add[]")
	return p.anyContainer(p.ctr("c", "securityContext.capabilities.add") + ".orValue([]).exists(x, !(" + inList("x", capabilitiesBaselineAllowed) + "))")
}

func capabilitiesRestrictedFails(p *TypedPod) string {
	p.read("containers[].securityContext.capabilities.drop[]")
	p.read("containers[].securityContext.capabilities.add[]")
	return p.anyContainer("!('ALL' in " + p.ctr("c", "securityContext.capabilities.drop") + ".orValue([])) || " +
		p.ctr("c", "securityContext.capabilities.add") + ".orValue([]).exists(x, x != 'NET_BIND_SERVICE')")
}

func hostNamespacesFails(p *TypedPod) string {
	var terms []string
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		terms = append(terms, p.spec(f)+".orValue(false)")
	}
	return or(terms...)
}

func hostPathVolumesFails(p *TypedPod) string {
	p.read("spec.volumes[].hostPath")
	return p.spec("volumes") + ".orValue([]).exists(v, has(v.hostPath))"
}

func hostPortsFails(p *TypedPod) string {
	p.read("containers[].ports[].hostPort")
	return p.anyContainer(p.ctr("c", "ports") + ".orValue([]).exists(port, port.?hostPort.orValue(0) != 0)")
}

func hostProbesAndHostLifecycleFails(p *TypedPod) string {
	var hosts []string
	for _, h := range []string{"livenessProbe", "readinessProbe", "startupProbe", "lifecycle.postStart", "lifecycle.preStop"} {
		for _, a := range []string{"httpGet", "tcpSocket"} {
			hosts = append(hosts, p.ctr("c", h+"."+a+".host"))
		}
	}
	return p.anyContainer("[" + strings.Join(hosts, ", ") + "].exists(host, host.orValue('') != '')")
}

func privilegedFails(p *TypedPod) string {
	return p.anyContainer(p.ctr("c", "securityContext.privileged") + ".orValue(false)")
}

func procMountFails(p *TypedPod) string {
	return p.anyContainer(p.ctr("c", "securityContext.procMount") + ".orValue('Default') != 'Default'")
}

func restrictedVolumesFails(p *TypedPod) string {
	var allowed []string
	for _, s := range allowedVolumeSources {
		p.read("spec.volumes[]." + s)
		allowed = append(allowed, "has(v."+s+")")
	}
	return p.spec("volumes") + ".orValue([]).exists(v, !(" + or(allowed...) + "))"
}

func runAsNonRootFails(p *TypedPod) string {
	pod := p.spec("securityContext.runAsNonRoot")
	return "!" + pod + ".orValue(true) || " + p.anyContainer("!"+p.ctr("c", "securityContext.runAsNonRoot")+".orValue("+pod+".orValue(false))")
}

func runAsUserFails(p *TypedPod) string {
	return p.spec("securityContext.runAsUser") + ".orValue(1) == 0 || " + p.anyContainer(p.ctr("c", "securityContext.runAsUser")+".orValue(1) == 0")
}

// seLinuxFails: the allowed types include "", so an absent seLinuxOptions
// (every part "") passes without a test of its own.
func seLinuxFails(types []string) func(*TypedPod) string {
	return func(p *TypedPod) string {
		bad := func(read func(string) string) string {
			return "!(" + inList(read("type")+".orValue('')", types) + ") || " + read("user") + ".orValue('') != '' || " + read("role") + ".orValue('') != ''"
		}
		pod := bad(func(f string) string { return p.spec("securityContext.seLinuxOptions." + f) })
		ctrs := p.anyContainer(bad(func(f string) string { return p.ctr("c", "securityContext.seLinuxOptions."+f) }))
		return pod + " || " + ctrs
	}
}

var seccompProfileTypes = []string{"RuntimeDefault", "Localhost"}

func badSeccomp(profile string) string {
	return profile + ".hasValue() && !(" + inList(profile+".?type.orValue('')", seccompProfileTypes) + ")"
}

func seccompBaselineFails(p *TypedPod) string {
	p.read("spec.securityContext.seccompProfile.type")
	p.read("containers[].securityContext.seccompProfile.type")
	return badSeccomp(p.spec("securityContext.seccompProfile")) + " || " + p.anyContainer(badSeccomp(p.ctr("c", "securityContext.seccompProfile")))
}

// seccompRestrictedFails: a bad profile fails the check; without one, a
// container with no profile fails it unless the pod's profile is valid.
func seccompRestrictedFails(p *TypedPod) string {
	pod := p.spec("securityContext.seccompProfile")
	podValid := inList(pod+".?type.orValue('')", seccompProfileTypes)
	return seccompBaselineFails(p) + " || (!(" + podValid + ") && " + p.anyContainer("!"+p.ctr("c", "securityContext.seccompProfile")+".hasValue()") + ")"
}

func sysctlsFails(allowed []string) func(*TypedPod) string {
	return func(p *TypedPod) string {
		p.read("spec.securityContext.sysctls[].name")
		return p.spec("securityContext.sysctls") + ".orValue([]).exists(s, !(" + inList("s.?name.orValue('')", allowed) + "))"
	}
}

func windowsHostProcessFails(p *TypedPod) string {
	return p.spec("securityContext.windowsOptions.hostProcess") + ".orValue(false) || " +
		p.anyContainer(p.ctr("c", "securityContext.windowsOptions.hostProcess")+".orValue(false)")
}
