package compiler

import "github.com/admitc/admitc/internal/diag"

// Diagnostic is one error found in a policy file.
type Diagnostic = diag.Diagnostic

// Diagnostics is a list of diagnostics; it is an error when non-empty.
type Diagnostics = diag.Diagnostics
