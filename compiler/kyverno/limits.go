package kyverno

import (
	"fmt"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
)

// MaxForEachDepth is how deeply validate.foreach entries may nest. Each
// level adds a loop over the enclosing ones to the rule's CEL, whose type
// checking (by admitc and by the API server) grows with the square of the
// expression; six levels check in a few seconds, and no published policy
// nests more than three.
const MaxForEachDepth = 6

// MaxExpressionLength is the API server's limit on the length of one CEL
// expression, in code points (cel-go's parser default, which the API
// server keeps).
const MaxExpressionLength = 100_000

// forEachDepth is how deeply the entries fes nest (1 for entries without
// a nested foreach).
func forEachDepth(fes []kyvernov1.ForEachValidation) int {
	depth := 0
	for i := range fes {
		depth = max(depth, 1+forEachDepth(fes[i].GetForEachValidation()))
	}
	return depth
}

// depthRefusal refuses a foreach rule nested deeper than MaxForEachDepth.
func depthRefusal(fes []kyvernov1.ForEachValidation, path string) *refusal {
	if d := forEachDepth(fes); d > MaxForEachDepth {
		return &refusal{"validate.foreach depth", path, fmt.Sprintf("a policy deeper than %d foreach levels (this one has %d) is not translated: each level adds a loop around the levels inside it, and type-checking the rule's CEL (by admitc and by the API server) grows faster than its size: flatten the nesting, or keep the rule under Kyverno", MaxForEachDepth, d)}
	}
	return nil
}

// lengthRefusal refuses n characters of CEL (for one expression, or so
// far) when the API server accepts fewer in one expression; what names the
// construct that produced them. Lowering stops there, before it builds
// longer text.
func lengthRefusal(n int, what, path string) *refusal {
	if n <= MaxExpressionLength {
		return nil
	}
	return &refusal{what + " size", path, fmt.Sprintf("the emitted expression is %d characters or more, the API server's limit is %d: split the rule into smaller ones, or keep it under Kyverno", n, MaxExpressionLength)}
}
