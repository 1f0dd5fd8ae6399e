package compiler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// celString quotes s as a CEL single-quoted string literal.
func celString(s string) string { return celenv.Quote(s) }

// celStringList renders a CEL list literal of strings.
func celStringList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = celString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// celStringMap renders a CEL map literal of strings with sorted keys.
func celStringMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = celString(k) + ": " + celString(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// EscapeJSONPointer escapes one JSON Pointer reference token (RFC 6901): ~ as
// ~0, then / as ~1, as the API server's jsonpatch.escapeKey does.
func EscapeJSONPointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// byKind renders a CEL conditional that picks a value by request.kind.kind
// for the given workload kinds, with value(kind) giving the CEL for each.
// Kinds that share a value share a branch; the most common value is the
// fallback, so a single-valued choice needs no condition at all.
func byKind(kinds []ir.WorkloadKind, value func(ir.WorkloadKind) string) string {
	var order []string
	groups := map[string][]string{}
	for _, k := range kinds {
		v := value(k)
		if _, ok := groups[v]; !ok {
			order = append(order, v)
		}
		groups[v] = append(groups[v], k.Resource.Kind)
	}
	fallback := order[0]
	for _, v := range order {
		if len(groups[v]) > len(groups[fallback]) {
			fallback = v
		}
	}
	var b strings.Builder
	for _, v := range order {
		if v == fallback {
			continue
		}
		fmt.Fprintf(&b, "%s ? %s : ", kindTest(groups[v]), v)
	}
	b.WriteString(fallback)
	return b.String()
}

func kindTest(kinds []string) string {
	if len(kinds) == 1 {
		return "request.kind.kind == " + celString(kinds[0])
	}
	return "request.kind.kind in " + celStringList(kinds)
}

// pointer turns a dotted field path into a JSON Pointer.
func pointer(dotted string) string {
	return "/" + strings.ReplaceAll(dotted, ".", "/")
}
