package kyverno

import (
	"fmt"
	"strings"

	"github.com/admitc/admitc/ir"
)

// MaxNameLength caps a successor's name: Kyverno writes policy names into
// label values (reports, generated admission policies), which hold 63
// characters.
const MaxNameLength = 63

// baseName is the successor's name for a family: the source policy's name
// when it has one rule (or none, as ValidatingPolicy), else POLICY-RULE;
// the note says when the name had to be changed to be valid.
func baseName(f *family) (string, string) {
	want := f.ref.Name
	if f.ref.Rule != "" && f.rules > 1 {
		want = f.ref.Name + "-" + f.ref.Rule
	}
	name := ObjectName(want)
	if name != want {
		return name, fmt.Sprintf("%q is not a valid policy name (lowercase letters, digits, '-' and '.', at most %d characters): the successor is named %q", want, MaxNameLength, name)
	}
	return name, ""
}

// memberName names one member of a family written out explicitly: the
// family's name for its own rule, autogen-NAME and autogen-cronjob-NAME for
// the twins (as Kyverno names a ValidatingPolicy's autogen policies).
func memberName(base string, f *family, p *ir.Policy) string {
	if p.From == nil || p.From.AutogenOf == "" {
		return base
	}
	generated := p.From.Rule
	if generated == "" {
		generated = p.Name
	}
	if strings.HasPrefix(generated, "autogen-cronjob-") {
		return ObjectName("autogen-cronjob-" + base)
	}
	return ObjectName("autogen-" + base)
}

// unique returns name, or name-2, name-3... when a successor of the same
// run holds it already (noted).
func unique(name string, used map[string]bool, notes *[]string) string {
	out := name
	for n := 2; used[out]; n++ {
		out = ObjectName(fmt.Sprintf("%s-%d", name, n))
	}
	if notes != nil {
		used[out] = true
		if out != name {
			*notes = append(*notes, fmt.Sprintf("the name %q is taken by another successor: this one is named %q", name, out))
		}
	}
	return out
}

// ObjectName turns s into a valid Kubernetes object name of at most
// MaxNameLength characters (ir.ObjectName).
func ObjectName(s string) string { return ir.ObjectName(s, MaxNameLength) }
