package conditions

import (
	"fmt"
	"regexp"
)

// Variable is a rule context entry of type variable, as Kyverno's variable
// loader reads it (pkg/engine/context/loaders/variable.go): Value (with its
// {{ }} variables substituted) or the JMESPath query on the context, or
// JMESPath applied to Value; Default when the query fails, or (without
// Value) gives null. A result that is still null fails the entry
// ("evaluated to nil"). Value and Default are decoded JSON.
type Variable struct {
	Name       string
	JMESPath   string
	Value      any
	HasValue   bool
	Default    any
	HasDefault bool
	// CEL, when set, is the entry's value as a CEL expression, loaded from
	// outside the request (a configMap entry read from params); the other
	// fields are then unused.
	CEL string
	// ConfigMap says the entry is a configMap entry: CEL reads the
	// ConfigMap as the policy's params, as Kyverno's loader builds it
	// ({data, metadata}), and loads it on every request the rule matches
	// (a missing ConfigMap is the binding's parameterNotFoundAction).
	ConfigMap bool
}

// PredefinedVariables are the names Kyverno defines in every rule's
// context; a context entry may not take one (validateRuleContext).
var PredefinedVariables = []string{"images", "request", "serviceAccountName", "serviceAccountNamespace", "element", "elementIndex"}

// Loads says whether Kyverno's deferred loader loads the context entry
// named name before it evaluates text (a query, or a {{ }} string).
func Loads(name, text string) bool { return loadsRegex(name).MatchString(text) }

// loadsRegex is Kyverno's deferred loader's matcher for a context entry
// (NewDeferredLoader): the name on ASCII word boundaries, not preceded by a
// dot. Kyverno loads (evaluates) every entry whose matcher matches a
// query's text before the query runs, in the order of the rule's context,
// whether or not the query then reads the entry; a failing entry fails the
// query.
func loadsRegex(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?:\A|\z|\s|[^.0-9A-Za-z])` + regexp.QuoteMeta(name) + `\b`)
}

// loads are the indexes of the context entries the query q loads.
func (s Scope) loads(q string) []int {
	var out []int
	for i, v := range s.Context {
		if loadsRegex(v.Name).MatchString(q) {
			out = append(out, i)
		}
	}
	return out
}

// withLoads binds the context entries the query q loads around its CEL
// translation c (which reads each entry by the name in names), in the
// order Kyverno loads them: an entry that fails fails the query (under
// Capture, makes it UnknownKey).
func withLoads(c string, s Scope, loads []int, names map[string]string, fresh *int) (string, error) {
	out := c
	for j := len(loads) - 1; j >= 0; j-- {
		v := s.Context[loads[j]]
		if s.readsVariables() {
			// Evaluated even when the query does not read it (Kyverno
			// loads it): no textual substitution.
			out = "[" + s.ContextVariables + v.Name + "].map(" + names[v.Name] + ", " + out + ")[0]"
			continue
		}
		def, err := s.variable(loads[j], fresh)
		if err != nil {
			return "", err
		}
		body := out
		if s.Capture {
			body = IsUnknownKey(names[v.Name]) + " ? " + UnknownKey + " : dyn(" + out + ")"
		}
		out = bind(names[v.Name], def, body)
	}
	return out, nil
}

// readsVariables says whether the context variables are read from the
// policy variables: at rule level (the request's object, no foreach
// capture), where they hold what Kyverno computes.
func (s Scope) readsVariables() bool {
	return s.ContextVariables != "" && !s.Capture && s.Object == "" && s.OldObject == "" && s.Operation == ""
}

// VariableExpression is the CEL of the policy variable holding the i-th
// context variable, read at rule level; it reads the earlier ones from
// their policy variables when s.ContextVariables is set.
func (s Scope) VariableExpression(i int) (string, error) {
	s.Capture, s.Object, s.OldObject, s.Operation = false, "", "", ""
	fresh := 0
	return s.variable(i, &fresh)
}

// variable is the CEL value of the i-th context entry, evaluated as
// Kyverno's loader does at rule level (no foreach element; the earlier
// entries visible). It fails evaluation where Kyverno's loader fails;
// under Capture it is UnknownKey there instead.
func (s Scope) variable(i int, fresh *int) (string, error) {
	v := s.Context[i]
	if v.CEL != "" {
		return v.CEL, nil
	}
	base := Scope{Object: s.Object, OldObject: s.OldObject, Operation: s.Operation, Capture: s.Capture, Context: s.Context[:i], ContextVariables: s.ContextVariables}
	name := func(prefix string) string {
		n := fmt.Sprintf("%s%d", prefix, *fresh)
		*fresh++
		return n
	}
	isNil := raise("failed to add context entry for variable " + v.Name + " since it evaluated to nil")
	if s.Capture {
		isNil = UnknownKey
	}
	o := name("cvo")
	notNil := func(e string) string { return bind(o, "dyn("+e+")", o+" == null ? "+isNil+" : "+o) }
	fail := func(part string, err error) (string, error) {
		return "", fmt.Errorf("context variable %s: %s%v", v.Name, part, err)
	}

	// With a default, a failing query takes it: the query runs under
	// Capture (a missing key gives UnknownKey; what CEL cannot catch is
	// refused), and so does a null result of a query on the context.
	var d, dv string
	qs := base
	if v.HasDefault {
		c, err := Value(v.Default, base, fresh)
		if err != nil {
			return fail("default: ", err)
		}
		d, dv = name("cvd"), c
		qs.Capture = true
	}
	var out string
	switch {
	case v.HasValue && v.JMESPath == "":
		c, err := Value(v.Value, base, fresh)
		if err != nil {
			return fail("value: ", err)
		}
		out = notNil(c)
	case v.HasValue:
		c, err := Value(v.Value, base, fresh)
		if err != nil {
			return fail("value: ", err)
		}
		in := name("cvv")
		q, err := QueryOn(v.JMESPath, in, qs, fresh)
		if err != nil {
			return fail("", err)
		}
		body := q
		if d != "" {
			// A query on the value that succeeds with null keeps null.
			r := name("cvr")
			body = bind(r, "dyn("+q+")", IsUnknownKey(r)+" ? "+d+" : "+r)
		}
		if s.Capture {
			body = IsUnknownKey(in) + " ? " + UnknownKey + " : dyn(" + body + ")"
		}
		out = bind(in, "dyn("+c+")", notNil(body))
	default:
		// The loader queries the context as is: unlike a {{ }}
		// substitution, it reads request.object (null) on DELETE.
		qs.Raw = true
		q, err := Query(v.JMESPath, qs, fresh)
		if err != nil {
			return fail("", err)
		}
		if d != "" {
			r := name("cvr")
			q = bind(r, "dyn("+q+")", IsUnknownKey(r)+" || "+r+" == null ? "+d+" : "+r)
		}
		out = notNil(q)
	}
	if d == "" {
		return out, nil
	}
	if s.Capture {
		// A default that does not resolve fails the entry.
		out = IsUnknownKey(d) + " ? " + UnknownKey + " : dyn(" + out + ")"
	}
	return bind(d, "dyn("+dv+")", out), nil
}
