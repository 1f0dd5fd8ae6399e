//go:build serveonly

package cli

import "github.com/spf13/cobra"

// toolCommands are none in the serve-only build: it serves, makes
// certificates and reports its version.
func toolCommands(Streams) []*cobra.Command { return nil }
