package podsecurity

import (
	"slices"
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
	"github.com/admitc/admitc/internal/celenv"
)

// A view is a CEL map of the pod a check reads, as Kyverno hands it to
// the check: 's' the pod spec, 'm' the pod metadata, 'k' the containers
// in visitContainers' order (init containers, containers, ephemeral
// containers), each a map of 'p' (its field path, spec.containers[0]),
// 'ps' (the path with digits starred, as Kyverno's regexIndex writes it),
// 'n' (its name) and 'c' (the container). A null value is the absent value
// of Go's decoding: an empty map, list or string.

// containerLists are a pod spec's container lists in visitContainers' order.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

func q(s string) string { return celenv.Quote(s) }

// orEmpty is the value of the optional opt, with null and absent as empty
// (empty is '{}', '[]' or "”").
func orEmpty(opt, empty string) string {
	return "[" + opt + ".orValue(" + empty + ")].map(x, x == null ? " + empty + " : x)[0]"
}

func objOf(opt string) string  { return orEmpty(opt, "{}") }
func listOf(opt string) string { return orEmpty(opt, "[]") }
func strOf(opt string) string  { return orEmpty(opt, "''") }

// isSet says a pointer field of Go's struct is not nil: present and not null.
func isSet(opt string) string { return "(" + opt + ".orValue(null) != null)" }

// isTrue says a *bool field is true.
func isTrue(opt string) string { return "(" + opt + ".orValue(false) == true)" }

// Pod is where a kind keeps the pod Kyverno's getSpec decodes: the pod
// spec and metadata of a Pod, of a controller's template, and of a
// CronJob's job template (whose metadata Kyverno takes from
// spec.jobTemplate.metadata, not from the pod template).
func Pod(root string) (spec, meta string) {
	controllers := "[" + strings.Join(quoteAll(Controllers), ", ") + "]"
	spec = root + ".kind == 'Pod' ? " + root + ".?spec : " + root + ".kind == 'CronJob' ? " + root + ".?spec.?jobTemplate.?spec.?template.?spec : " +
		root + ".kind in " + controllers + " ? " + root + ".?spec.?template.?spec : " + errorOptional("could not find correct resource type")
	meta = root + ".kind == 'Pod' ? " + root + ".?metadata : " + root + ".kind == 'CronJob' ? " + root + ".?spec.?jobTemplate.?metadata : " + root + ".?spec.?template.?metadata"
	return objOf("(" + spec + ")"), objOf("(" + meta + ")")
}

// Controllers are the kinds whose pod Kyverno reads from spec.template.
var Controllers = []string{"DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController"}

// errorOptional is an optional-typed expression that fails with why.
func errorOptional(why string) string { return "optional.of({}[" + q(why) + "])" }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return out
}

// containerRecords are the container maps of the lists, numbered within
// each list after keep (a CEL predicate over c, or "" for all).
func containerRecords(spec, keep string) string {
	var parts []string
	for _, l := range containerLists {
		list := listOf(spec + ".?" + l)
		if keep != "" {
			list += ".filter(c, " + keep + ")"
		}
		parts = append(parts, list+".transformList(i, c, {'p': dyn('spec."+l+"[' + string(i) + ']'), 'ps': dyn('spec."+l+"[*]'), 'n': dyn("+strOf("c.?name")+"), 'c': dyn(c == null ? {} : c)})")
	}
	return strings.Join(parts, " + ")
}

// DefaultView is the pod itself.
func DefaultView(spec, meta string) string {
	return "{'s': dyn(" + spec + "), 'm': dyn(" + meta + "), 'k': dyn(" + containerRecords(spec, "") + ")}"
}

// FakeView is Kyverno's pod for an exclusion without images
// (GetPodWithMatchingContainers): the pod with one container named fake.
func FakeView(pod string) string {
	return "{'s': dyn(" + pod + ".s), 'm': dyn(" + pod + ".m), 'k': dyn([{'p': dyn('spec.containers[0]'), 'ps': dyn('spec.containers[*]'), 'n': dyn('fake'), 'c': dyn({'name': 'fake'})}])}"
}

// MatchingView is Kyverno's pod for an exclusion with images: a pod with
// no field but the containers whose image matches one of the patterns.
func MatchingView(spec string, images []string) string {
	var ms []string
	for _, p := range images {
		ms = append(ms, pattern.WildcardMatch(p, strOf("c.?image")))
	}
	keep := "false"
	if len(ms) > 0 {
		keep = strings.Join(ms, " || ")
	}
	return "{'s': dyn({}), 'm': dyn({}), 'k': dyn(" + containerRecords(spec, keep) + ")}"
}

// A Placement is where every kind of a rule keeps its pod, when they agree:
// the schema paths (dotted, under the object) of the pod spec and of the
// metadata Kyverno's getSpec reads, and what Kyverno's convertChecks
// writes for "spec" in the message.
type Placement struct {
	Spec, Meta, Where string
}

// PlacementOf is where the kinds keep their pod; false when they do not
// all keep it in one place, or one is not a kind Kyverno reads a pod from.
func PlacementOf(kinds []string) (Placement, bool) {
	var out Placement
	for i, k := range kinds {
		var p Placement
		switch {
		case k == "Pod":
			p = Placement{"spec", "metadata", "spec"}
		case k == "CronJob":
			p = Placement{"spec.jobTemplate.spec.template.spec", "spec.jobTemplate.metadata", "spec.jobTemplate.spec.template.spec"}
		case slices.Contains(Controllers, k):
			p = Placement{"spec.template.spec", "spec.template.metadata", "spec.template.spec"}
		default:
			return Placement{}, false
		}
		if i > 0 && p != out {
			return Placement{}, false
		}
		out = p
	}
	return out, len(kinds) > 0
}

// Place rewrites t, translated over root, for objects of kinds that keep
// their pod at p, as the API server hands them to a policy: the pod is read
// from there, with no test of the kind, and a field read as optional is
// never null, so orEmpty's null test is left out.
func (t *Translation) Place(root string, p Placement) {
	prefix := strings.TrimPrefix(t.Result, "variables.")
	for i, v := range t.Variables {
		switch v.Name {
		case prefix + "Spec":
			t.Variables[i].Expression = optional(root, p.Spec) + ".orValue({})"
		case prefix + "Meta":
			t.Variables[i].Expression = optional(root, p.Meta) + ".orValue({})"
		case prefix + "Where":
			t.Variables[i].Expression = q(p.Where)
		default:
			t.Variables[i].Expression = withoutNullTests(v.Expression)
		}
	}
}

// withoutNullTests rewrites every orEmpty in e, [X.orValue(E)].map(x, x ==
// null ? E : x)[0], as X.orValue(E): the same value where X is never null.
func withoutNullTests(e string) string {
	for _, empty := range []string{"{}", "[]", "''"} {
		tail := ")].map(x, x == null ? " + empty + " : x)[0]"
		for {
			end := strings.Index(e, tail)
			if end < 0 {
				break
			}
			// The [ that opens the list of one: the last unmatched one before.
			depth, start := 0, -1
			for i := end; i >= 0 && start < 0; i-- {
				switch e[i] {
				case ']', ')', '}':
					depth++
				case '[', '(', '{':
					if depth == 0 && e[i] == '[' {
						start = i
					} else {
						depth--
					}
				}
			}
			inner := e[start+1 : end+1]
			if start < 0 || !strings.HasSuffix(inner, ".orValue("+empty+")") {
				// Not orEmpty's: leave this text and look after it.
				return e[:end+len(tail)] + withoutNullTests(e[end+len(tail):])
			}
			e = e[:start] + inner + e[end+len(tail):]
		}
	}
	return e
}
