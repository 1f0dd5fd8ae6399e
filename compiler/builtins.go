package compiler

import (
	"fmt"
	"strings"

	"github.com/admitc/admitc/ir"
)

// podVariables are the variables every built-in pod check starts from: the
// pod spec chosen by kind, its field path for messages, and whether the
// request is a kubectl debug update of pods/ephemeralcontainers (then only
// the ephemeral containers that oldObject did not have are judged).
func podVariables(kinds []ir.WorkloadKind, o ir.Origin) []ir.NamedExpression {
	v := func(name, expr string) ir.NamedExpression {
		return ir.NamedExpression{Name: name, Expression: expr, Origin: o}
	}
	return []ir.NamedExpression{
		v("podSpec", byKind(kinds, func(k ir.WorkloadKind) string { return "object." + k.PodSpecPath })),
		v("specPath", byKind(kinds, func(k ir.WorkloadKind) string { return celString(k.PodSpecPath) })),
		v("debugOnly", "has(request.subResource) && request.subResource == 'ephemeralcontainers'"),
		v("oldEphemeralNames", "oldObject == null ? [] : oldObject.spec.?ephemeralContainers.orValue([]).map(c, c.name)"),
	}
}

// containerLists are the three container lists of a pod spec.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// eachContainer renders a CEL list of messages: transform(c, path) for every
// container c of all three lists for which filter(c) is true, where path is a
// CEL string expression naming the container's field path. On a kubectl
// debug update only new ephemeral containers are considered.
func eachContainer(filter, transform func(path string) string) string {
	return eachContainerOf(containerLists, filter, transform)
}

// eachContainerOf is eachContainer over the given container lists only.
func eachContainerOf(lists []string, filter, transform func(path string) string) string {
	parts := make([]string, len(lists))
	for i, list := range lists {
		path := fmt.Sprintf("variables.specPath + '.%s[' + string(i) + ']'", list)
		src := fmt.Sprintf("variables.podSpec.?%s.orValue([])", list)
		cond := filter(path)
		if list == "ephemeralContainers" {
			parts[i] = fmt.Sprintf("%s.transformList(i, c, !(variables.debugOnly && c.name in variables.oldEphemeralNames) && (%s), %s)", src, cond, transform(path))
			continue
		}
		parts[i] = fmt.Sprintf("(variables.debugOnly ? [] : %s.transformList(i, c, %s, %s))", src, cond, transform(path))
	}
	return strings.Join(parts, " + ")
}

// violationsCheck is the one validation every built-in check lowers to: the
// violations variable must be empty, and its entries are the message.
func violationsCheck(prefix, fallback string, o ir.Origin) ir.Validation {
	msgExpr := "variables.violations.join('; ')"
	if prefix != "" {
		msgExpr = celString(prefix+": ") + " + " + msgExpr
	}
	mo := o
	return ir.Validation{Expression: "size(variables.violations) == 0", Message: fallback, MessageExpression: msgExpr, Origin: o, MessageExpressionOrigin: &mo}
}

func containerMsg(what, field string) func(string) string {
	return func(path string) string {
		return celString(`container "`) + " + c.name + " + celString(`" `+what+" (") + " + " + path + " + " + celString(field+")")
	}
}

func lowerPrivileged(o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	vs := eachContainer(
		func(string) string { return "c.?securityContext.?privileged.orValue(false) == true" },
		containerMsg("is privileged", ".securityContext.privileged"))
	return []ir.NamedExpression{{Name: "violations", Expression: vs, Origin: o}},
		violationsCheck("", "privileged containers are not allowed", o)
}

func lowerRunAsNonRoot(o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	filter := "!(c.?securityContext.?runAsNonRoot.hasValue() ? c.securityContext.runAsNonRoot == true : variables.podSpec.?securityContext.?runAsNonRoot.orValue(false) == true)"
	vs := eachContainer(func(string) string { return filter },
		containerMsg("may run as root: set runAsNonRoot: true", ".securityContext.runAsNonRoot, or in the pod's securityContext"))
	return []ir.NamedExpression{{Name: "violations", Expression: vs, Origin: o}},
		violationsCheck("", "containers must set runAsNonRoot: true", o)
}

func lowerMemoryLimit(o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	// Ephemeral containers cannot have resources: the API server rejects them.
	vs := eachContainerOf(containerLists[:2], func(string) string { return "!c.?resources.?limits.?memory.hasValue()" },
		containerMsg("has no memory limit", ".resources.limits.memory"))
	return []ir.NamedExpression{{Name: "violations", Expression: vs, Origin: o}},
		violationsCheck("set a memory limit on every container", "set a memory limit on every container", o)
}

// imageVariables resolve every image the way the container runtime does:
// digest and tag split off, a missing registry is docker.io, a single-name
// Docker Hub image is under library/. Each stage is a list of string maps
// with container, image, path and the stage's result.
func imageVariables(o ir.Origin) []ir.NamedExpression {
	const hubRest = "(m.host == '' ? m.repo : m.repo.substring(size(m.host) + 1))"
	entry := func(extra string) string {
		return "{'container': m.container, 'image': m.image, 'path': m.path, " + extra + "}"
	}
	stages := []struct{ name, expr string }{
		{"images", eachContainer(func(string) string { return "true" }, func(path string) string {
			return "{'container': string(c.name), 'image': string(c.?image.orValue('')), 'path': " + path + " + '.image'}"
		})},
		{"imageRepos", "variables.images.map(m, " + entry(
			"'repo': m.image.split('@')[0].lastIndexOf(':') > m.image.split('@')[0].lastIndexOf('/') ? m.image.split('@')[0].substring(0, m.image.split('@')[0].lastIndexOf(':')) : m.image.split('@')[0]") + ")"},
		{"imageHosts", "variables.imageRepos.map(m, " + entry(
			"'repo': m.repo, 'host': m.repo.contains('/') && (m.repo.split('/')[0].contains('.') || m.repo.split('/')[0].contains(':') || m.repo.split('/')[0] == 'localhost' || m.repo.split('/')[0].lowerAscii() != m.repo.split('/')[0]) ? m.repo.split('/')[0] : ''") + ")"},
		{"imageNames", "variables.imageHosts.map(m, " + entry(
			"'name': m.host in ['', 'docker.io', 'index.docker.io'] ? ("+hubRest+".contains('/') ? 'docker.io/' : 'docker.io/library/') + "+hubRest+" : m.repo") + ")"},
	}
	out := make([]ir.NamedExpression, len(stages))
	for i, s := range stages {
		out[i] = ir.NamedExpression{Name: s.name, Expression: s.expr, Origin: o}
	}
	return out
}

// RegistryPrefix normalises an allowed registry entry for whole-component
// comparison: no trailing slash.
func RegistryPrefix(s string) string { return strings.TrimRight(s, "/") }

func lowerRegistries(registries []string, o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	allowed := make([]string, len(registries))
	for i, r := range registries {
		allowed[i] = RegistryPrefix(r)
	}
	list := celStringList(allowed)
	vs := fmt.Sprintf("variables.imageNames.filter(m, !%s.exists(a, m.name == a || m.name.startsWith(a + '/'))).map(m, "+
		"'image \"' + m.image + '\" in container \"' + m.container + '\" (' + m.path + ') resolves to ' + m.name + ', which is not under an allowed registry (%s)')",
		list, strings.Join(allowed, ", "))
	vars := append(imageVariables(o), ir.NamedExpression{Name: "violations", Expression: vs, Origin: o})
	return vars, violationsCheck("", "images must come from an allowed registry: "+strings.Join(allowed, ", "), o)
}

func lowerDigest(o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	vs := "variables.images.filter(m, !m.image.matches('@sha256:[0-9a-f]{64}$')).map(m, " +
		"'image \"' + m.image + '\" in container \"' + m.container + '\" is not pinned by digest (@sha256:...)')"
	vars := []ir.NamedExpression{imageVariables(o)[0], {Name: "violations", Expression: vs, Origin: o}}
	return vars, violationsCheck("", "images must be pinned by digest (@sha256:...)", o)
}

func lowerRequiredLabels(kinds []ir.WorkloadKind, labels []string, o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	vars := []ir.NamedExpression{
		{Name: "podLabels", Expression: byKind(kinds, func(k ir.WorkloadKind) string { return "object." + k.PodMetadataPath + ".?labels.orValue({})" }), Origin: o},
		{Name: "labelsPath", Expression: byKind(kinds, func(k ir.WorkloadKind) string { return celString(k.PodMetadataPath + ".labels") }), Origin: o},
		{Name: "missing", Expression: celStringList(labels) + ".filter(l, !(l in variables.podLabels))", Origin: o},
	}
	return vars, ir.Validation{
		Expression:        "size(variables.missing) == 0",
		Message:           "missing required labels: " + strings.Join(labels, ", "),
		MessageExpression: "'missing required label(s) ' + variables.missing.join(', ') + ' (' + variables.labelsPath + ')'",
		Origin:            o, MessageExpressionOrigin: &o,
	}
}

// HostPathPrefix normalises an allowed host path for whole-component
// comparison: no trailing slash ("/" becomes "").
func HostPathPrefix(s string) string { return strings.TrimRight(s, "/") }

func lowerNoHostPath(allowedPaths []string, o ir.Origin) ([]ir.NamedExpression, ir.Validation) {
	allowed := make([]string, len(allowedPaths))
	for i, p := range allowedPaths {
		allowed[i] = HostPathPrefix(p)
	}
	vs := fmt.Sprintf("variables.podSpec.?volumes.orValue([]).transformList(i, v, has(v.hostPath) && !%s.exists(a, v.hostPath.path == a || v.hostPath.path.startsWith(a + '/')), "+
		"'volume \"' + v.name + '\" mounts hostPath \"' + v.hostPath.path + '\" (' + variables.specPath + '.volumes[' + string(i) + '].hostPath.path)%s')",
		celStringList(allowed), allowedSuffix(allowedPaths))
	return []ir.NamedExpression{{Name: "violations", Expression: vs, Origin: o}}, violationsCheck("", "hostPath volumes are not allowed", o)
}

func allowedSuffix(paths []string) string {
	if len(paths) == 0 {
		return ", and no hostPath is allowed"
	}
	return ", which is not under an allowed path (" + strings.Join(paths, ", ") + ")"
}

// lowerDefaultRequests builds the JSONPatch mutation that adds missing
// requests: a limit without a request becomes the request (as Pod defaulting
// does), otherwise the policy's value; present requests are kept. Containers
// that need nothing get no operation, so a second run yields an empty patch.
func lowerDefaultRequests(requests map[string]string, o ir.Origin) ir.Mutation {
	keys := sortedKeys(requests)
	missing := celStringList(keys) + ".filter(k, !(k in c.?resources.?requests.orValue({})))"
	value := "k in c.?resources.?limits.orValue({}) ? string(c.resources.limits[k]) : " + celStringMap(requests) + "[k]"
	merged := "(c.?resources.?requests.orValue({}).map(k, k) + " + missing + ").transformMapEntry(j, k, {k: k in c.?resources.?requests.orValue({}) ? c.resources.requests[k] : " + value + "})"
	lists := []string{"containers", "initContainers"}
	parts := make([]string, len(lists))
	for i, list := range lists {
		path := fmt.Sprintf("variables.specPointer + '/%s/' + string(i)", list)
		parts[i] = fmt.Sprintf("variables.podSpec.?%s.orValue([]).transformList(i, c, size(%s) > 0, "+
			"has(c.resources) ? JSONPatch{op: 'add', path: %s + '/resources/requests', value: %s} : JSONPatch{op: 'add', path: %s + '/resources', value: {'requests': %s}})",
			list, missing, path, merged, path, merged)
	}
	return ir.Mutation{PatchType: ir.JSONPatch, Expression: strings.Join(parts, " + "), Origin: o}
}

// lowerAddLabels builds the JSONPatch mutation that sets labels on the object,
// with keys escaped for JSON Pointer (cloudcaptain.io/mutated-by becomes
// cloudcaptain.io~1mutated-by), and the match condition that skips objects
// already labelled, so the mutation is idempotent.
func lowerAddLabels(labels map[string]string, o ir.Origin) (ir.NamedExpression, ir.Mutation) {
	keys := sortedKeys(labels)
	var ops, needs []string
	for _, k := range keys {
		differs := fmt.Sprintf("!(%s in object.metadata.labels) || object.metadata.labels[%s] != %s", celString(k), celString(k), celString(labels[k]))
		needs = append(needs, "("+differs+")")
		ops = append(ops, fmt.Sprintf("(%s ? [JSONPatch{op: 'add', path: %s, value: %s}] : [])", differs, celString("/metadata/labels/"+EscapeJSONPointer(k)), celString(labels[k])))
	}
	cond := ir.NamedExpression{Name: "needs-labels", Expression: "!has(object.metadata.labels) || " + strings.Join(needs, " || "), Origin: o}
	expr := fmt.Sprintf("!has(object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels', value: %s}] : %s", celStringMap(labels), strings.Join(ops, " + "))
	return cond, ir.Mutation{PatchType: ir.JSONPatch, Expression: expr, Origin: o}
}
