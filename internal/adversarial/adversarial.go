// Package adversarial builds Kyverno ClusterPolicies whose size grows with
// one parameter, to measure and bound what compiling them costs: nested
// validate.foreach, nested =(k) anchors and flat foreach entries. Tests
// and benchmarks of the compiler and the server use them; nothing else
// should.
package adversarial

import (
	"fmt"
	"strings"
)

// header is a ClusterPolicy with one Enforce rule on Pods, its validate
// block left open at four spaces of indentation.
const header = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: %s
  annotations:
    pod-policies.kyverno.io/autogen-controllers: none
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      failureAction: Enforce
      message: bad container
`

// NestedForEach is a policy whose foreach nests depth levels deep, each
// level iterating the containers, the innermost denying one image.
func NestedForEach(depth int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, header, "nested-foreach")
	ind := "      "
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "%sforeach:\n%s- list: request.object.spec.containers\n", ind, ind)
		ind += "  "
	}
	fmt.Fprintf(&b, "%sdeny:\n%s  conditions:\n%s    any:\n%s    - key: \"{{ element.image }}\"\n%s      operator: Equals\n%s      value: bad\n", ind, ind, ind, ind, ind, ind)
	return []byte(b.String())
}

// NestedAnchors is a policy whose pattern nests depth conditional anchors
// =(a) under the spec, the innermost requiring a value.
func NestedAnchors(depth int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, header, "nested-anchors")
	b.WriteString("      pattern:\n        spec:\n")
	// Flow style keeps the file linear in depth (block style would indent
	// each level further).
	b.WriteString("          x: ")
	b.WriteString(strings.Repeat(`{"=(a)": `, depth))
	b.WriteString("ok")
	b.WriteString(strings.Repeat("}", depth))
	b.WriteString("\n")
	return []byte(b.String())
}

// FlatForEach is a policy with n foreach entries side by side, each
// denying one image in the containers.
func FlatForEach(n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, header, "flat-foreach")
	b.WriteString("      foreach:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      - list: request.object.spec.containers\n        deny:\n          conditions:\n            any:\n            - key: \"{{ element.image }}\"\n              operator: Equals\n              value: bad%d\n", i)
	}
	return []byte(b.String())
}

// FlatForEachUnresolved is FlatForEach with each entry denying one
// runAsUser: the key does not resolve on a container without it, so the
// rule keeps its exact form, whose CEL grows with n.
func FlatForEachUnresolved(n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, header, "flat-foreach-unresolved")
	b.WriteString("      foreach:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "      - list: request.object.spec.containers\n        deny:\n          conditions:\n            any:\n            - key: \"{{ element.securityContext.runAsUser }}\"\n              operator: Equals\n              value: %d\n", i)
	}
	return []byte(b.String())
}
