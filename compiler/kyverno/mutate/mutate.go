package mutate

import "github.com/admitc/admitc/compiler/kyverno/conditions"

// StrategicMerge is a translated patchStrategicMerge.
type StrategicMerge struct {
	// Walk is a CEL string: '' when Kyverno's preprocessing goes through
	// the overlay on the object, 'C' or 'G' when a conditional or global
	// anchor is not met (Kyverno then applies an empty patch), 'E' when
	// it fails (the object holds something else than a list where the
	// overlay has one).
	Walk string
	// Patch is a CEL list of JSONPatch: the merge, when Walk is ''.
	Patch string
	// keys are the patch's keys with {{ }} variables, substituted before
	// the walk as Kyverno substitutes the rule before it preprocesses.
	keys keyBindings
}

// TranslateStrategicMerge translates a patchStrategicMerge overlay, read
// from JSON as Kyverno reads it.
func TranslateStrategicMerge(overlay any) (StrategicMerge, error) {
	return TranslateStrategicMergeIn(overlay, conditions.Scope{})
}

// TranslateStrategicMergeIn is TranslateStrategicMerge with its {{ }}
// variables read in the scope s (the rule's context variables).
func TranslateStrategicMergeIn(overlay any, s conditions.Scope) (StrategicMerge, error) {
	m, ok := overlay.(map[string]any)
	if !ok {
		return StrategicMerge{}, errorf("patchStrategicMerge", "an overlay that is not a map is not translated")
	}
	r := &reader{scope: s}
	n, err := r.readMap(m, "patchStrategicMerge", "")
	if err != nil {
		return StrategicMerge{}, err
	}
	w := &walker{scope: s}
	root := at{present: "true", value: "object"}
	walk, err := w.walk(n, root)
	if err != nil {
		return StrategicMerge{}, err
	}
	patch, err := w.merge(n, root, pointer{}, nil)
	if err != nil {
		return StrategicMerge{}, err
	}
	return StrategicMerge{Walk: walk, Patch: patch, keys: w.keys}, nil
}

// Expression is the mutation over the variable holding Walk (ref): the
// patch, no change, or an evaluation error as Kyverno's rule error (a key
// that does not substitute fails the rule whatever the walk says).
func (s StrategicMerge) Expression(ref string) string {
	return s.keys.wrap(ref + " == 'E' ? " + raiseList("failed to preprocess the patch: the object holds something else than a list where the overlay has one") + " : " + ref + " != '' ? [] : " + paren(s.Patch))
}
