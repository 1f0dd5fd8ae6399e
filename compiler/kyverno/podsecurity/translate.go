package podsecurity

import (
	"fmt"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/pattern"
)

// Variable is a named CEL expression the translation needs; later ones
// read earlier ones as variables.NAME.
type Variable struct {
	Name, Expression string
}

// Translation is a podSecurity block in CEL.
type Translation struct {
	// Variables hold the pod views and, last, the result: a list of the
	// failing checks, each as Kyverno's FormatChecksPrint writes it (an
	// empty list passes). A CEL error is Kyverno's rule error (a kind
	// Kyverno cannot read a pod from).
	Variables []Variable
	// Result is a CEL reference to the result (variables.NAME).
	Result string
}

// Error is a podSecurity setting admitc cannot reproduce; Path is under
// the podSecurity block (level, version, exclude[1].images).
type Error struct {
	Path, Reason string
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// Message is the CEL string of Kyverno's failure message for a rule named
// rule whose result is result.
func Message(rule string, ps *kyvernov1.PodSecurity, result string) string {
	return q(fmt.Sprintf("Validation rule '%s' failed. It violates PodSecurity \"%s:%s\": ", rule, ps.Level, ps.Version)) + " + " + result + ".join('')"
}

// Translate translates ps over the object at root ("object" or
// "oldObject") into variables named prefix, prefix+"Pod",
// prefix+"Exclude0", ... or says why it cannot.
func Translate(ps *kyvernov1.PodSecurity, root, prefix string) (Translation, error) {
	if err := Claimed(ps); err != nil {
		return Translation{}, err
	}
	minor, _ := ParseVersion(ps.Version)
	spec, meta := Pod(root)
	ref := func(name string) string { return "variables." + prefix + name }
	t := Translation{Variables: []Variable{{prefix + "Spec", spec}, {prefix + "Meta", meta}, {prefix + "Pod", DefaultView(ref("Spec"), ref("Meta"))}, {prefix + "Where", SpecPath(root)}}, Result: "variables." + prefix}
	pod := ref("Pod")
	var excludes []exclusion
	for i, x := range ps.Exclude {
		name := fmt.Sprintf("Exclude%d", i)
		view := FakeView(pod)
		if len(x.Images) > 0 {
			view = MatchingView(ref("Spec"), x.Images)
		}
		t.Variables = append(t.Variables, Variable{prefix + name, view})
		excludes = append(excludes, exclusion{x, ref(name)})
	}
	var checks []string
	for _, c := range Evaluated(string(ps.Level)) {
		t.Variables = append(t.Variables, Variable{prefix + "_" + c.ID, checkRecords(c, c.Selected(minor), pod, coveringExcludes(c.ID, excludes))})
		checks = append(checks, ref("_"+c.ID))
	}
	t.Variables = append(t.Variables, Variable{prefix, "[" + strings.Join(checks, ", ") + "].filter(c, " + CheckFails("c") + ").map(c, " + printedCheck("c", ref("Where")) + ")"})
	return t, nil
}

// CheckFails is the CEL test that the check whose variable (of a
// Translation) is check fails: some of its records remain.
func CheckFails(check string) string { return "size(" + check + "[1]) > 0" }

// SpecPath is the CEL string Kyverno's convertChecks writes for "spec"
// in every field of the message, by the kind at root: the pod spec's path
// in a controller or a CronJob, "spec" in a Pod.
func SpecPath(root string) string {
	return root + ".kind in [" + strings.Join(quoteAll(Controllers), ", ") + "] ? 'spec.template.spec' : " + root + ".kind == 'CronJob' ? 'spec.jobTemplate.spec.template.spec' : 'spec'"
}

// checkRecords is check c (at version v) on the pod view pod after the
// covering exclusions, as the pair [reason, records]: the check's
// ForbiddenReason (from all its records) and the records that remain, none
// when it passes (printed writes it as Kyverno's FormatChecksPrint).
func checkRecords(c Check, v Version, pod string, covering []exclusion) string {
	r := recorder{full: len(covering) > 0, raw: c.readsRecords()}
	pair := func(all, rest string) string { return "[dyn(" + c.reason(all) + "), dyn(" + rest + ")]" }
	if len(covering) == 0 {
		recs := v.Records(r, pod)
		if !c.readsRecords() {
			return pair("", recs)
		}
		return "[" + recs + "].map(d, " + pair("d", "d") + ")[0]"
	}
	key := byField
	for _, x := range covering {
		if len(x.Images) > 0 {
			key = byFieldAndName
		}
	}
	// The records of the pod and of each exclusion's view are written
	// once, mapped over the views: rs[0] the pod's, rs[i+1] those of
	// covering[i].
	views := []string{pod}
	var quals []string
	for i, x := range covering {
		views = append(views, x.view)
		quals = append(quals, x.qualifying(fmt.Sprintf("rs[%d]", i+1), key))
	}
	all := "[" + strings.Join(views, ", ") + "].map(view, " + v.Records(r, "view") + ")"
	remaining := "d.transformList(i, r, size(d.slice(0, i).filter(s, " + key("s") + " == " + key("r") + ")) < size(qs.filter(e, e == " + key("r") + ")) ? [] : [r]).flatten()"
	return "[" + all + "].map(rs, [rs[0]].map(d, [" + strings.Join(quals, " + ") + "].map(qs, " + pair("d", remaining) + ")[0])[0])[0]"
}

// printedCheck is a failing check c (a [reason, records] pair) as Kyverno's
// FormatChecksPrint writes it. Each printed error starts with its field,
// which is written as Kyverno's convertChecks rewrites it after the checks
// ran: every "spec" replaced by where, then every "metadata" by
// "spec.template.metadata", whatever the kind (strings.ReplaceAll, as
// CEL's replace does).
func printedCheck(c, where string) string {
	field := slot("e", slotField)
	shown := field + ".replace('spec', " + where + ").replace('metadata', 'spec.template.metadata') + " + slot("e", slotRest)
	return q("(Forbidden reason: ") + " + " + c + "[0] + " + q(", field error list: [") + " + " + c + "[1].filter(e, " + field + " != '').map(e, " + shown + ").join(', ') + '])'"
}

// exclusion is one exclude and the CEL view of its pod.
type exclusion struct {
	kyvernov1.PodSecurityStandard
	view string
}

func coveringExcludes(id string, xs []exclusion) []exclusion {
	var out []exclusion
	for _, x := range xs {
		for _, cid := range ControlChecks[x.ControlName] {
			if cid == id {
				out = append(out, x)
			}
		}
	}
	return out
}

// Kyverno's exemptExclusions removes, for each qualifying record of an
// exclusion's pod, the first record of the pod with the same key: the
// starred field for an exclusion without images, and the container's name
// too for one with images. Removals of one key do not change the count of
// another, so the records a check keeps are counted exactly: a key keeps
// max(0, its records - its qualifying records). Which of a key's records
// remain, and their order, follow Kyverno's swap-remove, which admitc does
// not reproduce: it keeps the last ones, in order (the message's order is
// Go's map order in Kyverno anyway). Both kinds of exclusion on one check
// are translated only where the exclusion without images cannot match a
// container's record (Claimed refuses the rest), so one key serves.
func byField(r string) string { return slot(r, slotStarred) }
func byFieldAndName(r string) string {
	return slot(r, slotStarred) + " + '|' + " + slot(r, slotName)
}

// slot is the CEL of slot i of the record r.
func slot(r string, i int) string { return fmt.Sprintf("%s[%d]", r, i) }

// qualifying are the keys of the records (over the exclusion's view) that
// remove a record of the pod: at the restricted field (any when none is
// given), every bad value matching one of the values (when given).
func (x exclusion) qualifying(recs string, key func(string) string) string {
	cond := "true"
	if x.RestrictedField != "" {
		cond = slot("e", slotStarred) + " == " + q(x.RestrictedField)
	}
	if len(x.Values) > 0 {
		var ms []string
		for _, p := range x.Values {
			ms = append(ms, pattern.WildcardMatch(p, "b"))
		}
		cond += fmt.Sprintf(" && e.slice(%d, size(e)).all(b, ", slotValues) + strings.Join(ms, " || ") + ")"
	}
	return "(" + recs + ").filter(e, " + slot("e", slotField) + " != '' && " + cond + ").map(e, " + key("e") + ")"
}
