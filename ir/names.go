package ir

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxObjectNameLength is the longest Kubernetes object name (a DNS-1123
// subdomain): admission policies and bindings are named by it.
const MaxObjectNameLength = 253

var invalidNameChars = regexp.MustCompile(`[^a-z0-9.-]+`)

// ObjectName turns s into a valid Kubernetes object name (a DNS-1123
// subdomain) of at most maxLen characters: lowercase, other characters as
// '-', every dot-separated part starting and ending with a letter or
// digit; a name cut to length ends with a hash of the whole. A valid name
// within maxLen is returned as it is.
func ObjectName(s string, maxLen int) string {
	clean := invalidNameChars.ReplaceAllString(strings.ToLower(s), "-")
	var parts []string
	for _, part := range strings.Split(clean, ".") {
		if part = strings.Trim(part, "-"); part != "" {
			parts = append(parts, part)
		}
	}
	out := strings.Join(parts, ".")
	if out == "" {
		out = "policy"
	}
	if len(out) > maxLen {
		sum := sha256.Sum256([]byte(s))
		out = strings.TrimRight(out[:maxLen-9], "-.") + "-" + hex.EncodeToString(sum[:4])
	}
	return out
}
