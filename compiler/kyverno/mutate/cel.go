package mutate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/celenv"
)

// Error is a construct the translation refuses.
type Error struct {
	// Path is the construct's place in the rule: patchStrategicMerge.spec.containers[0].
	Path string
	// Reason says what the construct is and why it is refused.
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

func errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...)}
}

func quote(s string) string { return celenv.Quote(s) }

// at is a place in the object: a CEL expression saying whether it is
// there, and one of its value (read only when it is).
type at struct{ present, value string }

// child is the value of key k of the map at a.
func (a at) child(k string) at { return a.childExpr(quote(k)) }

// childExpr is the value of the key the CEL string k names in the map at a.
func (a at) childExpr(k string) at {
	p := "type(" + a.value + ") == map && " + k + " in " + a.value
	if a.present != "true" {
		p = a.present + " && " + p
	}
	return at{present: p, value: a.value + "[" + k + "]"}
}

// isMap says the place holds a map.
func (a at) isMap() string {
	if a.present == "true" {
		return "type(" + a.value + ") == map"
	}
	return a.present + " && type(" + a.value + ") == map"
}

// has says the map at a holds key k.
func (a at) has(k string) string { return a.child(k).present }

// pointer is a JSON pointer under construction: literal parts and CEL
// expressions (list indexes).
type pointer struct{ parts []string }

func (p pointer) key(k string) pointer {
	k = strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
	return pointer{append(append([]string(nil), p.parts...), quote("/"+k))}
}

// keyExpr is p with the key the CEL string k names, escaped at admission.
func (p pointer) keyExpr(k string) pointer {
	return pointer{append(append([]string(nil), p.parts...), quote("/"), "string("+k+").replace('~', '~0').replace('/', '~1')")}
}

func (p pointer) index(i string) pointer {
	return pointer{append(append([]string(nil), p.parts...), quote("/"), "string("+i+")")}
}

func (p pointer) cel() string {
	var out []string
	lit := ""
	for _, part := range p.parts {
		if strings.HasPrefix(part, "'") {
			s, _ := strconv.Unquote(`"` + strings.ReplaceAll(part[1:len(part)-1], `"`, `\"`) + `"`)
			lit += s
			continue
		}
		if lit != "" {
			out = append(out, quote(lit))
			lit = ""
		}
		out = append(out, part)
	}
	if lit != "" || len(out) == 0 {
		out = append(out, quote(lit))
	}
	return strings.Join(out, " + ")
}

// op is one JSONPatch operation in a CEL list.
func op(kind string, p pointer, value string) string {
	if value == "" {
		return "[JSONPatch{op: " + quote(kind) + ", path: " + p.cel() + "}]"
	}
	return "[JSONPatch{op: " + quote(kind) + ", path: " + p.cel() + ", value: " + value + "}]"
}

// concat joins CEL lists; none is [].
func concat(lists []string) string {
	var out []string
	for _, l := range lists {
		if l != "" && l != "[]" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return "[]"
	}
	return strings.Join(out, " + ")
}

// value renders an overlay value as CEL: {{ }} variables as the conditions
// translation reads them, numbers as Kyverno's JSON keeps them.
func value(v any, path string, s conditions.Scope, fresh *int) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		if strings.Contains(x, "{{") {
			e, err := conditions.Value(x, s, fresh)
			if err != nil {
				return "", errorf(path, "%v", err)
			}
			return "dyn(" + e + ")", nil
		}
		return quote(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return "", errorf(path, "a number that is not an integer is not translated (Kyverno writes it through YAML)")
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case []any:
		var out []string
		for i, e := range x {
			c, err := value(e, fmt.Sprintf("%s[%d]", path, i), s, fresh)
			if err != nil {
				return "", err
			}
			out = append(out, "dyn("+c+")")
		}
		return "[" + strings.Join(out, ", ") + "]", nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			if strings.Contains(k, "{{") {
				return "", errorf(path+"."+k, "a key with {{ }} variables in a value is not translated")
			}
			c, err := value(x[k], path+"."+k, s, fresh)
			if err != nil {
				return "", err
			}
			out = append(out, quote(k)+": dyn("+c+")")
		}
		return "{" + strings.Join(out, ", ") + "}", nil
	}
	return "", errorf(path, "a value of type %T is not translated", v)
}

// raise is a CEL evaluation error with msg, of any type.
func raise(msg string) string { return "dyn({}[" + quote(msg) + "])" }

// raiseList is a CEL evaluation error with msg, of type list(JSONPatch).
func raiseList(msg string) string {
	return "[JSONPatch{op: 'test', path: ''}].filter(p, " + raise(msg) + ")"
}

// bind names value in body: the CEL environment of admission policies
// has no cel.bind before Kubernetes 1.31's, so as a one-element map.
func bind(name, value, body string) string {
	return "[" + value + "].map(" + name + ", " + body + ")[0]"
}
