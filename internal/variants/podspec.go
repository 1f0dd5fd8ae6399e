package variants

import (
	"strings"
)

// podTemplate is where a kind keeps its pod: the path of the pod's
// metadata and spec (a Pod's own; a pod controller's template, as
// Kyverno's autogen and the API server's pod-spec extraction read them).
type podTemplate struct {
	metadata, spec path
}

// podTemplates finds obj's pods by shape: a Pod's spec, a controller's
// spec.template, a CronJob's spec.jobTemplate.spec.template.
func podTemplates(obj map[string]any) []podTemplate {
	var out []podTemplate
	if obj["kind"] == "Pod" {
		out = append(out, podTemplate{metadata: path{"metadata"}, spec: path{"spec"}})
	}
	for _, t := range []path{{"spec", "template"}, {"spec", "jobTemplate", "spec", "template"}} {
		if spec, ok := get(obj, t.child("spec")); ok {
			if _, isMap := spec.(map[string]any); isMap {
				out = append(out, podTemplate{metadata: t.child("metadata"), spec: t.child("spec")})
			}
		}
	}
	return out
}

// containerLists are the pod spec's lists of containers.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// containerBreak is one change to a container that typical Pod Security
// and best-practice rules forbid.
type containerBreak struct {
	name   string
	change func(c map[string]any)
}

func setIn(c map[string]any, value any, keys ...string) {
	p := path{}
	for _, k := range keys {
		p = p.child(k)
	}
	set(c, p, value)
}

// containerBreaks are the changes an extra container carries.
var containerBreaks = []containerBreak{
	{"privileged", func(c map[string]any) { setIn(c, true, "securityContext", "privileged") }},
	{"hostPort", func(c map[string]any) {
		c["ports"] = []any{map[string]any{"containerPort": int64(80), "hostPort": int64(80), "protocol": "TCP"}}
	}},
	{"latest image", func(c map[string]any) { c["image"] = imageRepository(c["image"]) + ":latest" }},
	{"untagged image", func(c map[string]any) { c["image"] = imageRepository(c["image"]) }},
	{"other registry", func(c map[string]any) { c["image"] = "docker.io/library/busybox:1.36" }},
	{"no resources", func(c map[string]any) { delete(c, "resources") }},
	{"requests only", func(c map[string]any) {
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}
	}},
	{"runAsNonRoot false", func(c map[string]any) { setIn(c, false, "securityContext", "runAsNonRoot") }},
	{"runAsUser 0", func(c map[string]any) { setIn(c, int64(0), "securityContext", "runAsUser") }},
	{"allowPrivilegeEscalation", func(c map[string]any) { setIn(c, true, "securityContext", "allowPrivilegeEscalation") }},
	{"capabilities added", func(c map[string]any) {
		setIn(c, map[string]any{"add": []any{"NET_ADMIN", "SYS_ADMIN"}}, "securityContext", "capabilities")
	}},
	{"capabilities not dropped", func(c map[string]any) { setIn(c, []any{"NET_RAW"}, "securityContext", "capabilities", "drop") }},
	{"writable root filesystem", func(c map[string]any) { setIn(c, false, "securityContext", "readOnlyRootFilesystem") }},
	{"procMount Unmasked", func(c map[string]any) { setIn(c, "Unmasked", "securityContext", "procMount") }},
	{"seLinuxOptions", func(c map[string]any) {
		setIn(c, map[string]any{"type": "spc_t", "user": "root"}, "securityContext", "seLinuxOptions")
	}},
	{"seccomp Unconfined", func(c map[string]any) {
		setIn(c, map[string]any{"type": "Unconfined"}, "securityContext", "seccompProfile")
	}},
	{"appArmor Unconfined", func(c map[string]any) {
		setIn(c, map[string]any{"type": "Unconfined"}, "securityContext", "appArmorProfile")
	}},
	{"hostProcess", func(c map[string]any) { setIn(c, true, "securityContext", "windowsOptions", "hostProcess") }},
	{"no probes", func(c map[string]any) {
		delete(c, "livenessProbe")
		delete(c, "readinessProbe")
		delete(c, "startupProbe")
	}},
	{"unnamed port", func(c map[string]any) { c["ports"] = []any{map[string]any{"containerPort": int64(8080)}} }},
	{"no securityContext", func(c map[string]any) { delete(c, "securityContext") }},
}

// imageRepository is image without its tag or digest.
func imageRepository(image any) string {
	s, _ := image.(string)
	if s == "" {
		return "ghcr.io/acme/app"
	}
	if i := strings.Index(s, "@"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s = s[:i]
	}
	return s
}

// containerMutations are, for each pod of obj and each break: an extra
// container in every container list, copied from the pod's first
// container and renamed; and the break applied to every existing
// container in place.
func containerMutations(obj map[string]any, breaks []containerBreak) []mutation {
	var out []mutation
	for _, pt := range podTemplates(obj) {
		first, ok := get(obj, pt.spec.child("containers").child(0))
		if _, isMap := first.(map[string]any); !ok || !isMap {
			continue
		}
		for _, b := range breaks {
			for _, list := range containerLists {
				out = append(out, extraContainer(pt.spec.child(list), first.(map[string]any), b))
			}
			for _, p := range expand(obj, pt.spec.child("containers").child(anyIndex{})) {
				out = append(out, breakContainer(p, b))
			}
		}
	}
	return out
}

func extraContainer(list path, template map[string]any, b containerBreak) mutation {
	return mutation{kind: kindContainer, name: "extra " + list.String() + " with " + b.name, apply: func(obj any) any {
		c := deepCopy(template).(map[string]any)
		c["name"] = "extra"
		b.change(c)
		cur, _ := get(obj, list)
		l, _ := cur.([]any)
		return set(obj, list, append(append([]any{}, l...), c))
	}}
}

func breakContainer(p path, b containerBreak) mutation {
	return mutation{kind: kindContainer, name: p.String() + " with " + b.name, apply: func(obj any) any {
		if c, ok := get(obj, p); ok {
			if m, isMap := c.(map[string]any); isMap {
				b.change(m)
			}
		}
		return obj
	}}
}

// podBreak is a value set at a path relative to the pod spec.
type podBreak struct {
	at    path
	value any
}

// podBreaks are pod-level settings that Pod Security rules forbid,
// relative to the pod spec.
var podBreaks = []podBreak{
	{path{"hostNetwork"}, true},
	{path{"hostPID"}, true},
	{path{"hostIPC"}, true},
	{path{"volumes"}, []any{map[string]any{"name": "host", "hostPath": map[string]any{"path": "/var/run"}}}},
	{path{"volumes"}, []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}},
	{path{"securityContext", "sysctls"}, []any{map[string]any{"name": "kernel.msgmax", "value": "65536"}}},
	{path{"securityContext", "runAsNonRoot"}, false},
	{path{"securityContext", "runAsUser"}, int64(0)},
	{path{"securityContext", "seccompProfile"}, map[string]any{"type": "Unconfined"}},
	{path{"securityContext", "seLinuxOptions"}, map[string]any{"type": "spc_t"}},
	{path{"securityContext", "windowsOptions", "hostProcess"}, true},
}

// podSpecMutations set each pod break in each pod of obj.
func podSpecMutations(obj map[string]any, breaks []podBreak) []mutation {
	var out []mutation
	for _, pt := range podTemplates(obj) {
		for _, b := range breaks {
			p := append(append(path{}, pt.spec...), b.at...)
			out = append(out, setTo(kindPodSpec, p, b.value))
		}
	}
	return out
}

// pathsIn maps a caller's path, written for a Pod, onto obj: as is, and
// for each pod template, spec.X under the template's spec and metadata.X
// under its metadata (Kyverno's autogen rewrites patterns the same way).
func pathsIn(obj map[string]any, p path) []path {
	out := []path{p}
	if len(p) == 0 {
		return out
	}
	for _, pt := range podTemplates(obj) {
		switch {
		case p[0] == "spec" && len(pt.spec) > 1:
			out = append(out, append(append(path{}, pt.spec...), p[1:]...))
		case p[0] == "metadata" && len(pt.metadata) > 1:
			out = append(out, append(append(path{}, pt.metadata...), p[1:]...))
		}
	}
	return out
}
