package variants

// podSecurityContainerBreaks are container settings on both sides of the
// Pod Security Standards checks (Options.PodSecurity): allowed and
// forbidden values of each restricted field, so that a check's every
// branch is reached.
var podSecurityContainerBreaks = []containerBreak{
	{"restricted securityContext", func(c map[string]any) {
		c["securityContext"] = map[string]any{"allowPrivilegeEscalation": false, "runAsNonRoot": true,
			"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	}},
	{"capabilities drop ALL add NET_BIND_SERVICE", func(c map[string]any) {
		setIn(c, map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}}, "securityContext", "capabilities")
	}},
	{"capabilities add CHOWN and NET_RAW", func(c map[string]any) {
		setIn(c, map[string]any{"add": []any{"NET_RAW", "CHOWN", "NET_RAW"}, "drop": []any{"NET_RAW", "CHOWN"}}, "securityContext", "capabilities")
	}},
	{"empty capabilities", func(c map[string]any) { setIn(c, map[string]any{}, "securityContext", "capabilities") }},
	{"allowPrivilegeEscalation false", func(c map[string]any) { setIn(c, false, "securityContext", "allowPrivilegeEscalation") }},
	{"runAsNonRoot true", func(c map[string]any) { setIn(c, true, "securityContext", "runAsNonRoot") }},
	{"runAsUser 1000", func(c map[string]any) { setIn(c, int64(1000), "securityContext", "runAsUser") }},
	{"seccomp Localhost", func(c map[string]any) {
		setIn(c, map[string]any{"type": "Localhost", "localhostProfile": "p.json"}, "securityContext", "seccompProfile")
	}},
	{"seccomp without type", func(c map[string]any) { setIn(c, map[string]any{}, "securityContext", "seccompProfile") }},
	{"appArmor RuntimeDefault", func(c map[string]any) {
		setIn(c, map[string]any{"type": "RuntimeDefault"}, "securityContext", "appArmorProfile")
	}},
	{"seLinux container_engine_t", func(c map[string]any) {
		setIn(c, map[string]any{"type": "container_engine_t"}, "securityContext", "seLinuxOptions")
	}},
	{"seLinux role", func(c map[string]any) {
		setIn(c, map[string]any{"type": "container_t", "role": "r"}, "securityContext", "seLinuxOptions")
	}},
	{"procMount Default", func(c map[string]any) { setIn(c, "Default", "securityContext", "procMount") }},
	{"hostProcess false", func(c map[string]any) { setIn(c, false, "securityContext", "windowsOptions", "hostProcess") }},
	{"probe host", func(c map[string]any) {
		c["livenessProbe"] = map[string]any{"httpGet": map[string]any{"host": "10.0.0.1", "port": int64(80)}}
	}},
	{"lifecycle host", func(c map[string]any) {
		c["lifecycle"] = map[string]any{"preStop": map[string]any{"tcpSocket": map[string]any{"host": "example.com", "port": int64(80)}}}
	}},
	{"two hostPorts", func(c map[string]any) {
		c["ports"] = []any{map[string]any{"containerPort": int64(80), "hostPort": int64(8080)}, map[string]any{"containerPort": int64(81)}, map[string]any{"containerPort": int64(82), "hostPort": int64(9090)}}
	}},
	{"nginx image", func(c map[string]any) { c["image"] = "docker.io/library/nginx:1.27" }},
}

// podSecurityPodBreaks are pod-level settings on both sides of the checks.
var podSecurityPodBreaks = []podBreak{
	{path{"securityContext", "sysctls"}, []any{map[string]any{"name": "net.ipv4.ip_local_reserved_ports", "value": "1"}}},
	{path{"securityContext", "sysctls"}, []any{map[string]any{"name": "net.ipv4.tcp_keepalive_time", "value": "1"}, map[string]any{"name": "kernel.shm_rmid_forced", "value": "0"}}},
	{path{"securityContext", "sysctls"}, []any{map[string]any{"name": "net.ipv4.tcp_rmem", "value": "1"}, map[string]any{"name": "kernel.sem", "value": "1"}}},
	{path{"securityContext", "seccompProfile"}, map[string]any{"type": "RuntimeDefault"}},
	{path{"securityContext", "runAsNonRoot"}, true},
	{path{"securityContext", "appArmorProfile"}, map[string]any{"type": "Unconfined"}},
	{path{"securityContext", "seLinuxOptions"}, map[string]any{"user": "u", "role": "r"}},
	{path{"os"}, map[string]any{"name": "windows"}},
	{path{"volumes"}, []any{map[string]any{"name": "nfs", "nfs": map[string]any{"server": "s", "path": "/"}}, map[string]any{"name": "cfg", "configMap": map[string]any{"name": "c"}}, map[string]any{"name": "none"}}},
	{path{"volumes"}, []any{map[string]any{"name": "a", "hostPath": map[string]any{"path": "/a"}}, map[string]any{"name": "b", "hostPath": map[string]any{"path": "/b"}}, map[string]any{"name": "git", "gitRepo": map[string]any{"repository": "r"}}}},
}
