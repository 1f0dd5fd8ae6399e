package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/version"
)

// NewVersionCommand returns `admitc version`.
func NewVersionCommand(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print admitc's version and the image it ships as",
		Long: `version prints the version stamped into this binary at build time
(make build and make image stamp it; a plain go build reports the release of
the source tree), the image the webhook backend names by default, and the Go
version and VCS revision of the build.`,
		Example: `  admitc version
  admitc version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "text":
				fmt.Fprintf(s.Out, "admitc %s\nimage: %s\ngo: %s %s\n", info.Version, info.Image, info.GoVersion, info.Platform)
				if info.Revision != "" {
					dirty := ""
					if info.Modified {
						dirty = " (modified)"
					}
					fmt.Fprintf(s.Out, "revision: %s%s\n", info.Revision, dirty)
				}
			case "json":
				data, _ := json.MarshalIndent(info, "", "  ")
				fmt.Fprintln(s.Out, string(data))
			case "yaml":
				data, _ := yaml.Marshal(info)
				fmt.Fprint(s.Out, string(data))
			default:
				return usageError(fmt.Errorf("unknown output format %q: use text, json or yaml", output))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}
