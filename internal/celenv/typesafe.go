package celenv

// Type-safe comparisons for generated CEL.
//
// kube-apiserver 1.37 presents a built-in object to CEL as typed values
// (k8s.io/apiserver v0.37 SchemalessTypedToVal) whose equality with a value
// of another kind is an evaluation error ("no such overload"): `x == false`
// raises when x is a map or a list of the object. The 1.36 library admitc
// embeds answers false, as CEL's heterogeneous equality does. Generated
// comparisons of a value whose type is known only at run time with a
// literal are therefore guarded by the value's type, so that they decide
// alike (false) on every API server version.

// IsNumber renders whether the value of the CEL expression v is a number.
func IsNumber(v string) string {
	return "(type(" + v + ") == int || type(" + v + ") == double || type(" + v + ") == uint)"
}

// EqualsBool renders v == b, false (not an error) when v is not a bool.
func EqualsBool(v string, b bool) string {
	if b {
		return "(type(" + v + ") == bool && " + v + ")"
	}
	return "(type(" + v + ") == bool && !" + v + ")"
}

// EqualsString renders v == s, false (not an error) when v is not a string.
func EqualsString(v, s string) string {
	return "(type(" + v + ") == string && " + v + " == " + Quote(s) + ")"
}

// EqualsNumber renders v == n, with n a CEL int or double literal: false
// (not an error) when v is not a number; an int equals a double of the same
// value, as in CEL.
func EqualsNumber(v, n string) string {
	return "(" + IsNumber(v) + " && " + v + " == " + n + ")"
}

// EqualsSameKind renders a == b for two values whose types are known only
// at run time: false (not an error) when they are of different kinds
// (numbers of any type are one kind). The left operand decides a nested
// comparison, so write a literal of the policy as a.
func EqualsSameKind(a, b string) string {
	return "((type(" + a + ") == type(" + b + ") || " + IsNumber(a) + " && " + IsNumber(b) + ") && " + a + " == " + b + ")"
}
