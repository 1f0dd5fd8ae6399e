// Package libs holds the Go types that Kyverno's CEL environment declares
// as native types. ext.NativeTypes names a Go type after the last element
// of its package path, so this package is called libs, as Kyverno's
// pkg/cel/libs is, and its types have the same CEL names (libs.Exception)
// and fields as Kyverno's. It imports nothing.
package libs

// Exception is the "exceptions" variable of a Kyverno ValidatingPolicy or
// MutatingPolicy: the images and values that the PolicyExceptions matching
// the request allow (Kyverno v1.19 pkg/cel/libs.Exception). admitc reads no
// PolicyExceptions, so both lists are empty.
type Exception struct {
	AllowedImages []string `cel:"allowedImages"`
	AllowedValues []string `cel:"allowedValues"`
}
