// Package kyverno emits Kyverno policies from the IR, in two flavours:
// backend "kyverno" writes kyverno.io/v1 ClusterPolicies (native patterns and
// patchStrategicMerge where they express a built-in check exactly,
// validate.cel with the IR's own CEL otherwise), and backend "kyverno-cel"
// writes policies.kyverno.io/v1 ValidatingPolicy and MutatingPolicy, the CEL
// types that replace ClusterPolicy, and, for an imported policy (a
// ClusterPolicy's rule, a ValidatingPolicy, an admission policy), its
// successor (Successors: the migration admitc migrate writes). It imports
// ir, backends, internal/apiconv and Kyverno's API types only, never the
// Kyverno engine or the importer (the autogen check is passed in).
package kyverno
