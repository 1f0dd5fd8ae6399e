// Package examples holds admitc's built-in example policy set and the
// fixtures of the design document, embedded so a fresh binary can run its
// main job without any file.
package examples

import "embed"

// FS holds the example policies, manifests and parameter objects.
//
//go:embed policies manifests more params
var FS embed.FS

// DefaultPolicies is the path in FS of the policy set used when no
// --policies is given: the design document's seven policies.
const DefaultPolicies = "policies/policies.json"
