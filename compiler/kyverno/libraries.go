package kyverno

import (
	"regexp"
	"strings"
)

// Kyverno's own CEL libraries (github.com/kyverno/sdk extensions/cel/libs)
// reach outside the request (the API server, HTTP, registries, global
// context) or are simply not in the API server's CEL environment: a policy
// that calls one has no admission-policy equivalent.
var (
	libraryCall = regexp.MustCompile(`\b(resource|http|globalContext|imagedata|imageData|generator|json|yaml|gzip|hash|time|transform|user|x509|random)\.[A-Za-z_]\w*\s*\(`)
	libraryFunc = regexp.MustCompile(`(^|[^.\w])(image|parseImageReference|parseServiceAccount|listObjToMap|md5|sha1|sha256|random)\s*\(`)
	celLiteral  = regexp.MustCompile(`"(\\.|[^"\\])*"|'(\\.|[^'\\])*'`)
)

// libraryRefusal names the first Kyverno-only library an expression calls.
func libraryRefusal(exprs []string) *refusal {
	for _, e := range exprs {
		code := celLiteral.ReplaceAllStringFunc(e, func(s string) string { return strings.Repeat(" ", len(s)) })
		name := ""
		if m := libraryCall.FindStringSubmatch(code); m != nil {
			name = m[1]
		} else if m := libraryFunc.FindStringSubmatch(code); m != nil {
			name = m[2] + "()"
		}
		if name != "" {
			return &refusal{"CEL library " + name, "spec", "Kyverno's " + name + " library is evaluated by Kyverno only (it is not in the API server's CEL environment, and most of it reads the cluster, HTTP or registries at admission)"}
		}
	}
	return nil
}
