//go:build !serveonly

package cli

import "github.com/spf13/cobra"

// toolCommands are the commands of the full admitc: everything but serving.
// The serve-only build (tag serveonly) leaves them out, and with them the
// backends, the comparison engines and the test-suite runners.
func toolCommands(s Streams) []*cobra.Command {
	return []*cobra.Command{NewTestCommand(s), NewCELCommand(s), NewCompileCommand(s), NewVAPCommand(s), NewWebhookConfigCommand(s), NewCompareCommand(s), NewVerifyCommand(s), NewMigrateCommand(s), NewAuditCommand(s)}
}
