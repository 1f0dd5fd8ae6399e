// Package twins pairs every Kyverno pattern fixture
// (examples/kyverno-pattern/NAME: a ClusterPolicy with pattern, anyPattern,
// deny, foreach or podSecurity rules and its Kyverno test) with its twin
// (examples/twins/NAME): the CEL policy a person would write for the same
// rules. It is the yardstick of admitc's Kyverno translation: its test
// checks that each twin decides every fixture resource as the translation
// of the original does, and `make twins` (test/twins) measures the
// translation against the twin in CEL size and decision time.
//
// It reads fixtures (fixture.go), compiles a policy file as `admitc compile
// --backend vap` does (compile.go), measures the CEL of the emitted
// ValidatingAdmissionPolicies (size.go) and decides a resource with
// admitc's runtime (decide.go). It imports the compiler, the generate
// pipeline and the runtime; nothing in admitc imports it.
package twins
