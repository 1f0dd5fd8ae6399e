package conditions

import (
	"encoding/json"
	"fmt"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
)

// Error is a condition construct the translation refuses, at Field (a
// path inside the conditions: "any[0].key").
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Conditions translates an any/all condition block (deny conditions,
// preconditions) into a CEL boolean as Kyverno evaluates it
// (evaluateAnyAllConditionsWithContext): the any conditions in order up to
// the first that holds, then the all conditions in order up to the first
// that does not; an evaluation error on the way (a missing key) fails the
// expression as it fails Kyverno's rule, even when a later condition
// would decide the block (CEL's || and && would absorb it, so the chain is
// written with conditionals). An empty block holds.
func Conditions(c kyvernov1.AnyAllConditions, s Scope, fresh *int) (string, error) {
	anyOut := ""
	if c.AnyConditions != nil {
		anyOut = "false"
		for i := len(c.AnyConditions) - 1; i >= 0; i-- {
			e, err := condition(c.AnyConditions[i], s, fresh, fmt.Sprintf("any[%d]", i))
			if err != nil {
				return "", err
			}
			if anyOut == "false" {
				anyOut = e
			} else {
				anyOut = "((" + e + ") ? true : " + anyOut + ")"
			}
		}
	}
	allOut := ""
	for i := len(c.AllConditions) - 1; i >= 0; i-- {
		e, err := condition(c.AllConditions[i], s, fresh, fmt.Sprintf("all[%d]", i))
		if err != nil {
			return "", err
		}
		if allOut == "" {
			allOut = e
		} else {
			allOut = "((" + e + ") ? " + allOut + " : false)"
		}
	}
	switch {
	case anyOut == "" && allOut == "":
		return "true", nil
	case allOut == "":
		return anyOut, nil
	case anyOut == "":
		return allOut, nil
	}
	// Kyverno evaluates the all block whatever the any block gave.
	return bind("anyHolds", anyOut, "("+allOut+") ? anyHolds : false"), nil
}

// Decode reads any/all conditions as the Kyverno API types hold them
// (decoded JSON); the older list form is refused.
func Decode(raw any) (kyvernov1.AnyAllConditions, error) {
	var c kyvernov1.AnyAllConditions
	switch t := raw.(type) {
	case nil:
		// No conditions: Kyverno's TransformConditions gives an empty
		// any/all block, which holds.
		return c, nil
	case []kyvernov1.Condition:
		// The list form before any/all: Kyverno's evaluateOldConditions
		// evaluates it in order as all does.
		c.AllConditions = t
		return c, nil
	case []any:
		data, err := json.Marshal(t)
		if err == nil {
			err = json.Unmarshal(data, &c.AllConditions)
		}
		if err != nil {
			return c, &Error{Reason: err.Error()}
		}
		return c, nil
	}
	data, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil {
		return c, &Error{Reason: err.Error()}
	}
	return c, nil
}

// operands are a condition's key and value as CEL, an error at the field
// that does not translate.
func operands(c kyvernov1.Condition, s Scope, fresh *int, at string) (key, val string, err error) {
	if key, err = Value(c.GetKey(), s, fresh); err != nil {
		return "", "", &Error{Field: at + ".key", Reason: err.Error()}
	}
	if val, err = Value(c.GetValue(), s, fresh); err != nil {
		return "", "", &Error{Field: at + ".value", Reason: err.Error()}
	}
	return key, val, nil
}

func condition(c kyvernov1.Condition, s Scope, fresh *int, at string) (string, error) {
	key, val, err := operands(c, s, fresh, at)
	if err != nil {
		return "", err
	}
	e, err := Operator(string(c.Operator), key, val, c.GetKey(), c.GetValue())
	if err != nil {
		return "", &Error{Field: at + ".operator", Reason: err.Error()}
	}
	return e, nil
}

// Outcome translates an any/all condition block as Kyverno evaluates a
// foreach entry's preconditions, into a CEL string: 'true', 'false', or
// 'error' when Kyverno's evaluation fails on a key it cannot resolve (the
// scope is put under Capture). Kyverno evaluates in order and stops: the
// any conditions up to the first that holds, then the all conditions up
// to the first that does not; an error on the way is the block's error.
func Outcome(c kyvernov1.AnyAllConditions, s Scope, fresh *int) (string, error) {
	s.Capture = true
	anyOut := "'true'"
	if c.AnyConditions != nil {
		anyOut = "'false'"
		for i := len(c.AnyConditions) - 1; i >= 0; i-- {
			e, err := conditionOutcome(c.AnyConditions[i], s, fresh, fmt.Sprintf("any[%d]", i))
			if err != nil {
				return "", err
			}
			anyOut = bind("a"+fmt.Sprint(i), e, "a"+fmt.Sprint(i)+" == 'false' ? "+anyOut+" : a"+fmt.Sprint(i))
		}
	}
	allOut := "'true'"
	for i := len(c.AllConditions) - 1; i >= 0; i-- {
		e, err := conditionOutcome(c.AllConditions[i], s, fresh, fmt.Sprintf("all[%d]", i))
		if err != nil {
			return "", err
		}
		allOut = bind("b"+fmt.Sprint(i), e, "b"+fmt.Sprint(i)+" == 'true' ? "+allOut+" : b"+fmt.Sprint(i))
	}
	if allOut == "'true'" {
		return anyOut, nil
	}
	return bind("ar", anyOut, "ar == 'error' ? 'error' : "+bind("lr", allOut, "lr == 'error' ? 'error' : ar == 'true' ? lr : 'false'")), nil
}

// conditionOutcome is one condition under Capture: 'error' when its key
// or value does not resolve, else whether the operator holds.
func conditionOutcome(c kyvernov1.Condition, s Scope, fresh *int, at string) (string, error) {
	key, val, err := operands(c, s, fresh, at)
	if err != nil {
		return "", err
	}
	k, v := "ck"+fmt.Sprint(*fresh), "cv"+fmt.Sprint(*fresh)
	*fresh++
	e, err := Operator(string(c.Operator), k, v, c.GetKey(), c.GetValue())
	if err != nil {
		return "", &Error{Field: at + ".operator", Reason: err.Error()}
	}
	return bind(k, "dyn("+key+")", bind(v, "dyn("+val+")", IsUnknownKey(k)+" || "+IsUnknownKey(v)+" ? 'error' : ("+e+") ? 'true' : 'false'")), nil
}
