package podsecurity

import "strings"

// Each check below is one VersionedCheck of Kyverno's fork of
// k8s.io/pod-security-admission/policy (check_*.go), run with
// WithFieldErrors as Kyverno runs it: a CEL list of records (records.go)
// over the view v, in the order the check appends its field errors.

func sc(k string) string      { return k + ".c.?securityContext" }
func podSC(v string) string   { return v + ".s.?securityContext" }
func windows(v string) string { return "(" + v + ".s.?os.?name.orValue('') == 'windows')" }

// allowPrivilegeEscalation 1.8: containers must set
// allowPrivilegeEscalation=false.
func allowPrivilegeEscalation(r recorder, v string) string {
	f := containerField("k", ".securityContext.allowPrivilegeEscalation")
	return perContainer(v, "!"+isSet(sc("k"))+" ? ["+r.required(f, "k.n")+"] : !"+isSet(sc("k")+".?allowPrivilegeEscalation")+
		" ? ["+r.forbiddenText(f, "k.n", "'nil'")+"] : "+when(isTrue(sc("k")+".?allowPrivilegeEscalation"), r.forbiddenText(f, "k.n", "'true'")))
}

// allowPrivilegeEscalation 1.25: Windows pods are exempt.
func allowPrivilegeEscalation125(r recorder, v string) string {
	return exemptWindows(v, allowPrivilegeEscalation(r, v))
}

func exemptWindows(v, recs string) string { return "(" + windows(v) + " ? [] : " + recs + ")" }

// appArmorProfile 1.0: profile types RuntimeDefault or Localhost; the
// beta annotations runtime/default, localhost/* or empty.
func appArmorProfile(r recorder, v string) string {
	profile := func(opt string, f fieldAt, name string) string {
		return whenValue(strOf(opt+".?type"),
			func(typ string) string { return isSet(opt) + " && !(" + typ + " in ['RuntimeDefault', 'Localhost'])" },
			func(typ string) string { return r.forbiddenString(f, name, typ) })
	}
	pod := profile(podSC(v)+".?appArmorProfile", podField("spec.securityContext.appArmorProfile.type"), "''")
	ctrs := perContainer(v, profile(sc("k")+".?appArmorProfile", containerField("k", ".securityContext.appArmorProfile.type"), "k.n"))
	ann := objOf(v + ".m.?annotations")
	val := "[" + ann + "[a]].map(x, x == null ? '' : x)[0]"
	annErr := r.forbiddenText(fieldAt{"'metadata.annotations[' + a + ']'", "'metadata.annotations[' + " + starDigits("a") + " + ']'"}, "''", val)
	// An empty value is allowed, so the bad value is never empty.
	anns := ann + ".filter(a, a.startsWith('container.apparmor.security.beta.kubernetes.io/') && !(" + val + " == '' || " + val + " == 'runtime/default' || " + val + ".startsWith('localhost/'))).map(a, " + annErr + ")"
	return pod + " + " + ctrs + " + " + anns
}

// appArmorReason is pluralize("forbidden AppArmor profile", ...) over the
// distinct bad types and the bad annotations.
func appArmorReason(recs string) string {
	types := recs + ".filter(r, !" + slot("r", slotField) + ".startsWith('metadata.')).map(r, " + slot("r", slotRaw) + ").distinct()"
	anns := recs + ".filter(r, " + slot("r", slotField) + ".startsWith('metadata.'))"
	return "(size(" + types + ") + size(" + anns + ") == 1 ? 'forbidden AppArmor profile' : 'forbidden AppArmor profiles')"
}

// starDigits is Kyverno's regexIndex.ReplaceAllString(s, "*") over a CEL
// string: every run of digits becomes one '*'.
func starDigits(s string) string {
	isDigit := func(i string) string { return "'0123456789'.contains(" + s + ".substring(" + i + ", " + i + " + 1))" }
	return "lists.range(size(" + s + ")).map(i, " + isDigit("i") + " ? (i > 0 && " + isDigit("(i - 1)") + " ? '' : '*') : " + s + ".substring(i, i + 1)).join('')"
}

var capabilitiesBaselineAllowed = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}

// strings of a []string field, null elements as "".
func stringList(opt string) string { return listOf(opt) + ".map(x, x == null ? '' : x)" }

// capabilitiesBaseline 1.0: capabilities.add only from the default set.
func capabilitiesBaseline(r recorder, v string) string {
	caps := sc("k") + ".?capabilities"
	bad := stringList(caps+".?add") + ".filter(x, !(x in [" + strings.Join(quoteAll(capabilitiesBaselineAllowed), ", ") + "])).distinct().sort()"
	f := containerField("k", ".securityContext.capabilities.add")
	return perContainer(v, "["+bad+"].map(b, "+isSet(caps)+" && size(b) > 0 ? ["+r.forbiddenList(f, "k.n", "b")+"] : []).flatten()")
}

// capabilitiesRestricted 1.22: drop must include ALL, add only
// NET_BIND_SERVICE; the drop errors of every container come first.
func capabilitiesRestricted(r recorder, v string) string {
	caps := sc("k") + ".?capabilities"
	drop := stringList(caps + ".?drop")
	fd := containerField("k", ".securityContext.capabilities.drop")
	drops := perContainer(v, "!"+isSet(caps)+" ? ["+r.required(fd, "k.n")+"] : 'ALL' in "+drop+" ? [] : size("+drop+") > 0 ? ["+r.forbiddenList(fd, "k.n", drop+".distinct().sort()")+"] : ["+r.required(fd, "k.n")+"]")
	add := stringList(caps+".?add") + ".filter(x, x != 'NET_BIND_SERVICE').distinct().sort()"
	adds := perContainer(v, "["+add+"].map(b, "+isSet(caps)+" && size(b) > 0 ? ["+r.forbiddenList(containerField("k", ".securityContext.capabilities.add"), "k.n", "b")+"] : []).flatten()")
	return drops + " + " + adds
}

func capabilitiesRestricted125(r recorder, v string) string {
	return exemptWindows(v, capabilitiesRestricted(r, v))
}

// hostNamespaces 1.0: hostNetwork, hostPID and hostIPC not true.
func hostNamespaces(r recorder, v string) string {
	var parts []string
	for _, f := range []string{"hostNetwork", "hostPID", "hostIPC"} {
		parts = append(parts, when(isTrue(v+".s.?"+f), r.forbiddenText(podField("spec."+f), "''", "'true'")))
	}
	return strings.Join(parts, " + ")
}

// hostPathVolumes 1.0: no hostPath volume.
func hostPathVolumes(r recorder, v string) string {
	f := fieldAt{"'spec.volumes[' + string(i) + '].hostPath'", "'spec.volumes[*].hostPath'"}
	return listOf(v+".s.?volumes") + ".transformList(i, vol, " + when(isSet("vol.?hostPath"), r.forbiddenString(f, "''", strOf("vol.?hostPath.?path"))) + ").flatten()"
}

// hostPorts 1.0: no container port sets hostPort.
func hostPorts(r recorder, v string) string {
	f := fieldAt{"k.p + '.ports[' + string(i) + '].hostPort'", "k.ps + '.ports[*].hostPort'"}
	port := "[port.?hostPort.orValue(0)].map(x, x == null ? 0 : x)[0]"
	return perContainer(v, listOf("k.c.?ports")+".transformList(i, port, "+when(port+" != 0", r.forbiddenText(f, "k.n", "string("+port+")"))+").flatten()")
}

// hostProbesAndHostLifecycle 1.34: no host in probes' and lifecycle
// handlers' httpGet and tcpSocket; it fails without field errors.
func hostProbesAndHostLifecycle(r recorder, v string) string {
	var hosts []string
	for _, h := range []string{"livenessProbe", "readinessProbe", "startupProbe", "lifecycle.?postStart", "lifecycle.?preStop"} {
		for _, a := range []string{"httpGet", "tcpSocket"} {
			hosts = append(hosts, "("+isSet("k.c.?"+h+".?"+a)+" && "+strOf("k.c.?"+h+".?"+a+".?host")+" != '')")
		}
	}
	return "(" + v + ".k.exists(k, " + strings.Join(hosts, " || ") + ") ? [" + r.noFieldErrors() + "] : [])"
}

// privileged 1.0: privileged not true.
func privileged(r recorder, v string) string {
	return perContainer(v, when(isTrue(sc("k")+".?privileged"), r.forbiddenText(containerField("k", ".securityContext.privileged"), "k.n", "'true'")))
}

// procMount 1.0: procMount unset or Default.
func procMount(r recorder, v string) string {
	pm := sc("k") + ".?procMount"
	return perContainer(v, whenValue(strOf(pm),
		func(m string) string { return isSet(pm) + " && " + m + " != 'Default'" },
		func(m string) string {
			return r.forbiddenString(containerField("k", ".securityContext.procMount"), "k.n", m)
		}))
}

// allowedVolumeSources and restrictedVolumeSources are restrictedVolumes'
// switch, in its order.
var (
	allowedVolumeSources    = []string{"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret"}
	restrictedVolumeSources = []string{"hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos"}
)

// restrictedVolumes 1.0: only the allowed volume sources.
func restrictedVolumes(r recorder, v string) string {
	var allowed []string
	for _, s := range allowedVolumeSources {
		allowed = append(allowed, isSet("vol.?"+s))
	}
	kind := "'unknown'"
	for i := len(restrictedVolumeSources) - 1; i >= 0; i-- {
		s := restrictedVolumeSources[i]
		kind = isSet("vol.?"+s) + " ? " + q(s) + " : (" + kind + ")"
	}
	f := fieldAt{"'spec.volumes[' + string(i) + '].' + t", "'spec.volumes[*].' + t"}
	return listOf(v+".s.?volumes") + ".transformList(i, vol, " + strings.Join(allowed, " || ") + " ? [] : [" + kind + "].map(t, " + r.forbiddenEmpty(f, "''") + ")).flatten()"
}

// runAsNonRoot 1.0: runAsNonRoot true at pod level, or on every container;
// the pod's and containers' explicit false first, then the containers that
// did not set it.
func runAsNonRoot(r recorder, v string) string {
	pod := podSC(v) + ".?runAsNonRoot"
	podTrue := isTrue(pod)
	podFalse := "(" + isSet(pod) + " && !" + podTrue + ")"
	c := sc("k") + ".?runAsNonRoot"
	f := containerField("k", ".securityContext.runAsNonRoot")
	explicit := perContainer(v, when(isSet(c)+" && !"+isTrue(c), r.forbiddenText(f, "k.n", "'false'")))
	implicit := perContainer(v, when("!"+isSet(c)+" && !"+podTrue, r.required(f, "k.n")))
	return when(podFalse, r.forbiddenText(podField("spec.securityContext.runAsNonRoot"), "''", "'false'")) + " + " + explicit + " + " + implicit
}

// runAsUser 1.23: runAsUser not 0, at pod level or in a container.
func runAsUser(r recorder, v string) string {
	zero := func(opt string) string { return "(" + isSet(opt) + " && " + opt + ".orValue(null) == 0)" }
	pod := when(zero(podSC(v)+".?runAsUser"), r.forbiddenText(podField("spec.securityContext.runAsUser"), "''", "'0'"))
	return pod + " + " + perContainer(v, when(zero(sc("k")+".?runAsUser"), r.forbiddenText(containerField("k", ".securityContext.runAsUser"), "k.n", "'0'")))
}

// seLinux is seLinuxOptions 1.0 (types) or 1.31 (types with
// container_engine_t): type from the allowed set, no user, no role; the
// pod's errors first.
func seLinux(types []string) func(r recorder, v string) string {
	return func(r recorder, v string) string {
		errs := func(opt string, at func(string) fieldAt, name string) string {
			typ, user, role := strOf(opt+".?type"), strOf(opt+".?user"), strOf(opt+".?role")
			// Every type list holds "", so a bad type is never empty.
			bad := func(field, value string, cond func(string) string) string {
				return whenValue(value, cond, func(value string) string { return r.forbiddenValue(at(field), name, value) })
			}
			set := func(value string) string { return value + " != ''" }
			return "(" + isSet(opt) + " ? " + bad("type", typ, func(t string) string { return "!(" + t + " in [" + strings.Join(quoteAll(types), ", ") + "])" }) + " + " +
				bad("user", user, set) + " + " + bad("role", role, set) + " : [])"
		}
		pod := errs(podSC(v)+".?seLinuxOptions", func(f string) fieldAt { return podField("spec.securityContext.seLinuxOptions." + f) }, "''")
		ctrs := perContainer(v, errs(sc("k")+".?seLinuxOptions", func(f string) fieldAt {
			return containerField("k", ".securityContext.seLinuxOptions."+f)
		}, "k.n"))
		return pod + " + " + ctrs
	}
}

var (
	seLinuxTypes    = []string{"", "container_t", "container_init_t", "container_kvm_t"}
	seLinuxTypes131 = append(append([]string{}, seLinuxTypes...), "container_engine_t")
)

func validSeccomp(opt string) string {
	return "(" + strOf(opt+".?type") + " in ['Localhost', 'RuntimeDefault'])"
}

// seccompBaseline 1.19: a seccompProfile set at pod or container level
// has type RuntimeDefault or Localhost.
func seccompBaseline(r recorder, v string) string {
	profile := func(opt string, f fieldAt, name string) string {
		return whenValue(strOf(opt+".?type"),
			func(typ string) string { return isSet(opt) + " && !(" + typ + " in ['Localhost', 'RuntimeDefault'])" },
			func(typ string) string { return r.forbiddenString(f, name, typ) })
	}
	return profile(podSC(v)+".?seccompProfile", podField("spec.securityContext.seccompProfile.type"), "''") + " + " +
		perContainer(v, profile(sc("k")+".?seccompProfile", containerField("k", ".securityContext.seccompProfile.type"), "k.n"))
}

// seccompRestricted 1.19: as seccompBaseline, and a container without a
// profile needs a valid pod profile; when a profile is bad, only the bad
// profiles are reported.
func seccompRestricted(r recorder, v string) string {
	pod := podSC(v) + ".?seccompProfile"
	c := sc("k") + ".?seccompProfile"
	podSet := "(" + isSet(pod) + " && " + validSeccomp(pod) + ")"
	implicit := perContainer(v, when("!"+isSet(c)+" && !"+podSet, r.required(containerField("k", ".securityContext.seccompProfile.type"), "k.n")))
	return "[" + seccompBaseline(r, v) + "].map(bad, size(bad) > 0 ? bad : " + implicit + ")[0]"
}

func seccompRestricted125(r recorder, v string) string {
	return exemptWindows(v, seccompRestricted(r, v))
}

// sysctls are the allowed sysctls of each version of the sysctls check.
var (
	sysctls10  = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	sysctls127 = append(append([]string{}, sysctls10...), "net.ipv4.ip_local_reserved_ports")
	sysctls129 = append(append([]string{}, sysctls127...), "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")
	sysctls132 = append(append([]string{}, sysctls129...), "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
)

// sysctls checks the pod's sysctls names against the allowed set.
func sysctls(allowed []string) func(r recorder, v string) string {
	return func(r recorder, v string) string {
		name := strOf("s.?name")
		f := fieldAt{"'spec.securityContext.sysctls[' + string(i) + '].name'", "'spec.securityContext.sysctls[*].name'"}
		bad := whenValue(name, func(n string) string { return "!(" + n + " in [" + strings.Join(quoteAll(allowed), ", ") + "])" },
			func(n string) string { return r.forbiddenString(f, "''", n) })
		return listOf(podSC(v)+".?sysctls") + ".transformList(i, s, " + bad + ").flatten()"
	}
}

// windowsHostProcess 1.0: hostProcess not true, the pod's error first.
func windowsHostProcess(r recorder, v string) string {
	hp := ".?windowsOptions.?hostProcess"
	return when(isTrue(podSC(v)+hp), r.forbiddenText(podField("spec.securityContext.windowsOptions.hostProcess"), "''", "'true'")) + " + " +
		perContainer(v, when(isTrue(sc("k")+hp), r.forbiddenText(containerField("k", ".securityContext.windowsOptions.hostProcess"), "k.n", "'true'")))
}
