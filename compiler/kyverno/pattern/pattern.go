package pattern

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Outcomes of a translated pattern, as Kyverno names a rule's status.
const (
	// Pass: the resource matches the pattern.
	Pass = "pass"
	// Fail: the resource violates the pattern.
	Fail = "fail"
	// Skip: a conditional or global anchor was not satisfied; admission
	// proceeds without a violation.
	Skip = "skip"
	// EngineError: Kyverno's engine reports an error instead of a failure (a
	// conditional or existence anchor key was looked for and never found
	// before the failure); the failurePolicy decides.
	EngineError = "error"
)

// Expr is a translated pattern or anyPattern.
type Expr struct {
	// Result is a CEL expression of type string: 'pass', 'skip', or 'fail '
	// followed by Kyverno's failure path ("fail /spec/containers/0/image/").
	// For an anyPattern the failure lists each failed pattern's index and
	// path, one per line ("fail [0]/spec/\n[1]/metadata/").
	Result string
	// Any is set for an anyPattern.
	Any bool
}

// Outcome is a CEL expression of the outcome word (Pass, Fail or Skip) of
// the result that ref (a CEL expression, e.g. a variable holding Result)
// refers to.
func (e Expr) Outcome(ref string) string {
	return ref + ".split(' ')[0]"
}

// Message is a CEL expression of Kyverno's violation message for rule with
// validate.message message, for a failed result that ref refers to:
// "validation error: <message>. rule <rule> failed at path <path>".
func (e Expr) Message(ref, rule, message string) string {
	if message != "" && !strings.HasSuffix(message, ".") {
		message += "."
	}
	if e.Any {
		items := ref + ".substring(5).split('\\n').map(s, " + quote("rule "+rule) + " + s.replace(']', '] failed at path ', 1)).join(' ')"
		prefix := "validation error: "
		if message != "" {
			prefix += message + " "
		}
		return quote(prefix) + " + " + items
	}
	prefix := "validation error: "
	if message != "" {
		prefix += message + " "
	}
	return quote(prefix+"rule "+rule+" failed at path ") + " + " + ref + ".substring(5)"
}

// Error is a pattern construct the translation refuses: Kyverno's engine
// would decide it in a way the CEL does not reproduce.
type Error struct {
	// Path is the construct's place in the pattern: spec.containers[0].image.
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

// Translate turns a validate.pattern (as sigs.k8s.io/yaml decodes it) into
// CEL over the resource root (e.g. "object"). A pattern value with {{ }}
// variables is refused; TranslateWith translates it.
func Translate(p any, root string) (Expr, error) {
	return TranslateWith(p, root, nil)
}

// Resolve translates a pattern value holding {{ }} variables into a CEL
// expression of the value Kyverno's SubstituteAll writes there before it
// matches: the variable's own value (of any type) when the string is one
// variable, else text. The expression fails where the substitution fails.
type Resolve func(value string) (string, error)

// TranslateWith is Translate that reads the pattern's {{ }} values with
// resolve (see dynamic.go); a nil resolve refuses them.
func TranslateWith(p any, root string, resolve Resolve) (Expr, error) {
	return translate(p, root, field.NewPath("pattern"), resolve)
}

func translate(p any, root string, fp *field.Path, resolve Resolve) (Expr, error) {
	if err := checkDepth(p, fp, 0); err != nil {
		return Expr{}, err
	}
	p, err := resolveReferences(p, fp)
	if err != nil {
		return Expr{}, err
	}
	return translateResolved(p, root, fp, resolve)
}

// translateResolved translates a pattern whose $( ) references are
// substituted.
func translateResolved(p any, root string, fp *field.Path, resolve Resolve) (Expr, error) {
	if err := checkVariables(p, fp, resolve != nil); err != nil {
		return Expr{}, err
	}
	t := &translator{tracked: trackedKeys(p), resolve: resolve}
	if len(t.tracked) > 26 {
		return Expr{}, errorf(fp, "more than 26 distinct conditional and existence anchor keys")
	}
	if err := t.readValues(p, fp); err != nil {
		return Expr{}, err
	}
	out, err := t.element(p, root, rootPath(), fp, context{})
	if err != nil {
		return Expr{}, err
	}
	return Expr{Result: t.bindValues(t.finish(out))}, nil
}

// TranslateAny turns a validate.anyPattern into CEL over root: pass if one
// pattern passes, skip if every pattern skipped, fail otherwise. A pattern
// value with {{ }} variables is refused; TranslateAnyWith translates it.
func TranslateAny(ps []any, root string) (Expr, error) {
	return TranslateAnyWith(ps, root, nil)
}

// TranslateAnyWith is TranslateAny that reads {{ }} values with resolve.
func TranslateAnyWith(ps []any, root string, resolve Resolve) (Expr, error) {
	if len(ps) == 0 {
		return Expr{Result: "'pass'", Any: true}, nil
	}
	// Kyverno substitutes the references of the whole anyPattern list.
	if err := checkDepth(ps, field.NewPath("anyPattern"), -1); err != nil {
		return Expr{}, err
	}
	doc, err := resolveReferences(ps, field.NewPath("anyPattern"))
	if err != nil {
		return Expr{}, err
	}
	ps = doc.([]any)
	var rs []string
	for i, p := range ps {
		e, err := translateResolved(p, root, field.NewPath("anyPattern").Index(i), resolve)
		if err != nil {
			return Expr{}, err
		}
		rs = append(rs, e.Result)
	}
	var idx []string
	for i := range ps {
		idx = append(idx, strconv.Itoa(i))
	}
	failed := "[" + strings.Join(idx, ", ") + "].filter(i, rs[i].startsWith('fail') || rs[i].startsWith('error')).map(i, '[' + string(i) + ']' + rs[i].substring(rs[i].indexOf(' ') + 1)).join('\\n')"
	body := "rs.exists(r, r == 'pass') ? 'pass' : rs.all(r, r == 'skip') ? 'skip' : 'fail ' + " + failed
	return Expr{Result: bind("rs", "["+strings.Join(rs, ", ")+"]", body), Any: true}, nil
}

// checkVariables refuses {{ }} variables in keys, and in values unless
// values says they are read (Kyverno substitutes them before matching).
// ($( ) references are substituted by then; a $( that Kyverno's regex does
// not take is text.)
func checkVariables(p any, fp *field.Path, values bool) error {
	switch t := p.(type) {
	case map[string]any:
		for k, v := range t {
			if hasVariable(k) {
				return errorf(fp.Child(k), "variables in pattern keys are not translated")
			}
			if err := checkVariables(v, fp.Child(k), values); err != nil {
				return err
			}
		}
	case []any:
		for i, v := range t {
			if err := checkVariables(v, fp.Index(i), values); err != nil {
				return err
			}
		}
	case string:
		if hasVariable(t) && !values {
			return errorf(fp, "variables {{ }} in pattern values are not translated")
		}
	}
	return nil
}

func hasVariable(s string) bool { return strings.Contains(s, "{{") }
