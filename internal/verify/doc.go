// Package verify runs policy test files: it finds them under the paths it
// is given, hands each to the test-file format that claims it (gator
// suites today; a Kyverno test runner plugs in as another Format), and
// reports one Result per expected result with its outcome, as a table,
// JSON, JUnit XML or Markdown. It imports the compiler and the runtime;
// never a backend or the CLI.
package verify
