package conditions

import (
	"fmt"
	"strconv"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
)

// Condition messages, as Kyverno's evaluateAnyAllConditionsWithContext
// returns them: when a block holds, the message of the first any
// condition that holds (the others are not evaluated) and the messages
// of every all condition, joined with "; " (the list form before any/all
// joins every message with ";"); empty messages are left out. Kyverno
// returns the messages as written: a deny rule substitutes their {{ }}
// variables with its own message (getDenyMessage).

// IsList says raw is the list form of conditions (before any/all).
func IsList(raw any) bool {
	switch raw.(type) {
	case []any, []kyvernov1.Condition:
		return true
	}
	return false
}

// HasMessages says a condition of the block carries a message.
func HasMessages(c kyvernov1.AnyAllConditions) bool {
	for _, l := range [][]kyvernov1.Condition{c.AnyConditions, c.AllConditions} {
		for _, cond := range l {
			if cond.Message != "" {
				return true
			}
		}
	}
	return false
}

// HeldMessages are the joined messages Kyverno returns when the block
// holds: one per any condition that can be the first to hold (in the
// order of the any conditions), or one when that does not change the
// message. list says the block is in the list form.
func HeldMessages(c kyvernov1.AnyAllConditions, list bool) []string {
	var all []string
	for _, cond := range c.AllConditions {
		all = append(all, cond.Message)
	}
	if list {
		return []string{JoinNonEmpty(all, ";")}
	}
	if len(c.AnyConditions) == 0 {
		return []string{JoinNonEmpty(all, "; ")}
	}
	var out []string
	differ := false
	for i, cond := range c.AnyConditions {
		m := JoinNonEmpty(append([]string{cond.Message}, all...), "; ")
		differ = differ || (i > 0 && m != out[0])
		out = append(out, m)
	}
	if !differ {
		return out[:1]
	}
	return out
}

// FirstHolding is a CEL int: the index of the block's first any
// condition that holds. It is meant to be evaluated only when the block
// holds, so the conditions before that one evaluated without error.
func FirstHolding(c kyvernov1.AnyAllConditions, s Scope, fresh *int) (string, error) {
	out := "-1"
	for i := len(c.AnyConditions) - 1; i >= 0; i-- {
		e, err := condition(c.AnyConditions[i], s, fresh, fmt.Sprintf("any[%d]", i))
		if err != nil {
			return "", err
		}
		out = "((" + e + ") ? " + strconv.Itoa(i) + " : " + out + ")"
	}
	return out, nil
}

// Choose is a CEL string: the i-th of the literal messages, i a CEL int
// (FirstHolding).
func Choose(i string, messages []string) string {
	out := quote(messages[len(messages)-1])
	for k := len(messages) - 2; k >= 0; k-- {
		out = "(" + i + " == " + strconv.Itoa(k) + " ? " + quote(messages[k]) + " : " + out + ")"
	}
	return out
}

// StringField is a CEL expression that raises where Kyverno's
// substitution of the {{ }} variables of a rule's string field
// (SubstituteAllInRule) fails: a variable that does not resolve, or a
// field that is one variable whose value is neither a string nor null
// (the substituted rule does not decode). Its value is true otherwise.
func StringField(raw string, s Scope, fresh *int) (string, error) {
	if !variableRegex.MatchString(raw) {
		return "true", nil
	}
	c, err := text(raw, s, fresh, true)
	if err != nil {
		return "", err
	}
	v := "sf" + strconv.Itoa(*fresh)
	*fresh++
	return bind(v, "dyn("+c+")", "type("+v+") == string || "+v+" == null ? true : "+raise("the substituted field is not a string")), nil
}

// DenyMessages are Kyverno's getDenyMessage texts of a failed deny rule
// named rule, one per held message: the rule's message and the held
// conditions' messages joined with "; ", or "validation error: rule RULE
// failed" when both are empty.
func DenyMessages(message, rule string, held []string) []string {
	out := make([]string, len(held))
	for i, h := range held {
		out[i] = JoinNonEmpty([]string{message, h}, "; ")
		if out[i] == "" {
			out[i] = "validation error: rule " + rule + " failed"
		}
	}
	return out
}

// JoinNonEmpty is Kyverno's stringutils.JoinNonEmpty: the non-empty
// elements joined with sep.
func JoinNonEmpty(elems []string, sep string) string {
	var kept []string
	for _, e := range elems {
		if e != "" {
			kept = append(kept, e)
		}
	}
	return strings.Join(kept, sep)
}
