// Package golden holds admitc's golden corpus: one directory per case with
// an input policy file (policy.yaml, policy.json, or policy.ref naming a file
// in the repository), optional compile.flags and test.flags, and one sibling
// file per output (ir.json, vap.yaml, map.yaml, webhook.yaml, test.txt,
// errors.txt). A missing output file means "expect empty".
//
// `go test ./golden` compares every output byte for byte and decodes each
// YAML document strictly into its typed Kubernetes object; `make golden`
// (go test ./golden -update) rewrites the files. See README.md.
package golden
