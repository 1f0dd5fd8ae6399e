// Package cli implements admitc's commands. Each command is a constructor
// returning a *cobra.Command around an options struct (Complete, Validate,
// Run) that writes to injected streams, so commands are tested without a
// process. cmd/admitc only wires it to os.Args and the exit code.
package cli
