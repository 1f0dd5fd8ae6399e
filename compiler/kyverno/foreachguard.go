package kyverno

import (
	"fmt"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
)

// An element of an entry whose checks can raise an evaluation error (a
// deny, or a nested foreach) is evaluated only if no element before it
// failed, so that an error is raised exactly when it is Kyverno's first
// non-passing element. The test "an element before it failed" is not the
// earlier element's full outcome (its message, its entry and element
// indexes): that would repeat the element's whole lowering inside itself
// at every level of a nested foreach, and the CEL would double in size
// with each level. It is elementFails, a boolean whose size grows by one
// loop per level:
//
//   - false exactly when the element's outcome is pass or none (and then
//     it raises nothing, as the outcome does not);
//   - true when the outcome is a failure or an error;
//   - true or an evaluation error when evaluating the outcome raises one.
//
// The last case may differ from the outcome without changing the rule's
// result: the element itself is evaluated in order too, so when its error
// is the first non-passing element the rule raises it, and when an
// element before it failed, the guard holds either way (exists absorbs
// an error when another element fails).

// elementFails is whether the element (the CEL names e and i) of the
// entry fe fails or errs, as above.
func (l *foreachLowering) elementFails(fe *kyvernov1.ForEachValidation, path string, ctx loopContext, e, i string) (string, *refusal) {
	inner := elementContext(fe, ctx, e, i)
	fails, f := l.checkFails(fe, path, inner)
	if f != nil {
		return "", f
	}
	pre, f := l.precondition(fe, path, inner)
	if f != nil {
		return "", f
	}
	if pre != "" {
		fails = "(" + pre + ") == 'true' && " + fails
	}
	if fe.ElementScope != nil && *fe.ElementScope {
		fails = "(type(" + e + ") != map || " + fails + ")"
	}
	return "(" + e + " != null && " + fails + ")", nil
}

// checkFails is whether the entry's check on the element of ctx fails or
// errs, as above: a deny's conditions hold, a pattern's outcome is a
// failure or an error, an element of a nested foreach fails.
func (l *foreachLowering) checkFails(fe *kyvernov1.ForEachValidation, path string, ctx loopContext) (string, *refusal) {
	if fe.Deny == nil && fe.GetPattern() == nil && fe.GetAnyPattern() == nil && len(fe.GetForEachValidation()) > 0 {
		return l.entriesFail(fe.GetForEachValidation(), path+".foreach", ctx)
	}
	out, _, f := l.check(fe, path, ctx)
	if f != nil {
		return "", f
	}
	return bindCEL("eo", out, bad("eo")), nil
}

// entriesFail is whether an element of the nested entries fes fails or
// errs, as above: the elements of an entry whose list does not resolve
// are none.
func (l *foreachLowering) entriesFail(fes []kyvernov1.ForEachValidation, path string, ctx loopContext) (string, *refusal) {
	out := "false"
	for k := len(fes) - 1; k >= 0; k-- {
		fe := &fes[k]
		ep := fmt.Sprintf("%s[%d]", path, k)
		list, f := l.entryList(fe, ep, ctx)
		if f != nil {
			return "", f
		}
		elems, e, i := l.name("ls"), l.name("el"), l.name("ix")
		fails, f := l.elementFails(fe, ep, ctx, e, i)
		if f != nil {
			return "", f
		}
		some := bindCEL(elems, "type("+elems+") == list ? "+elems+" : ["+elems+"]", elems+".exists("+i+", "+e+", "+fails+")")
		out = bindCEL(elems, "dyn("+list+")", "!("+conditions.IsUnknownKey(elems)+") && "+some) + " || " + out
	}
	return "(" + out + ")", nil
}
