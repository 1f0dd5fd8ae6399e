// Package verify runs policy test files: it finds them under the paths it
// is given, hands each to the test-file format that claims it (gator
// suites and Kyverno tests; a format may run only some of the files it
// finds in a directory, as kyverno test runs only kyverno-test.yaml), and
// reports one Result per expected result with its outcome (passed,
// failed, unsupported, error, and the warnings and results without a
// response that the format's own tool passes silently), as a table, JSON,
// JUnit XML or Markdown. Files found in directories and files a test names
// must be regular files (internal/inputfile). It imports the compiler and
// the runtime; never a backend or the CLI.
package verify
