// Package migrate turns Kyverno policies into their successors and proves
// the translation: `admitc migrate` reads ClusterPolicies, Policies,
// ValidatingPolicies, MutatingPolicies (and admission policies), and for
// each input policy writes the policies.kyverno.io/v1 successor
// (backends/kyverno.Successors), the same rules as admission policies and
// bindings (backends/vap, backends/map), the input's Kyverno test
// rewritten for the successors (answers from internal/verify's
// KyvernoOutcomes), and a report per file (migrated, skipped as holding
// no policy, or refused as unreadable or not compiling, the rest still
// migrated) and per rule: translated, translated with a difference, or
// refused and why.
//
// SameAsReimport is the check that keeps Kyverno's autogen in a successor
// only when the successor, read back through compiler/kyverno, decides as
// the source's autogen rules do; internal/generate gives it to the
// kyverno-cel backend, so compile and migrate emit the same successors.
//
// It imports the compiler, the backends it writes with, internal/render,
// internal/inputfile and internal/verify; never internal/generate or the
// CLI.
package migrate
