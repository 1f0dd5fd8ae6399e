// Package kyverno emits Kyverno policies from the IR, in two flavours:
// backend "kyverno" writes kyverno.io/v1 ClusterPolicies (native patterns and
// patchStrategicMerge where they express a built-in check exactly,
// validate.cel with the IR's own CEL otherwise), and backend "kyverno-cel"
// writes policies.kyverno.io/v1 ValidatingPolicy and MutatingPolicy, the CEL
// types that replace ClusterPolicy. It imports ir, backends and Kyverno's API
// types only, never the Kyverno engine.
package kyverno
