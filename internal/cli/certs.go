package cli

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/admitc/admitc/internal/certs"
)

// NewCertsCommand returns `admitc certs`.
func NewCertsCommand(s Streams) *cobra.Command {
	var (
		out   string
		dns   []string
		ips   []string
		days  int
		force bool
	)
	cmd := &cobra.Command{
		Use:   "certs --out DIR --dns NAME...",
		Short: "Create a CA and a serving certificate for the webhook (pure Go, no openssl)",
		Long: `Creates an EC P-256 CA and a serving key and certificate with
extendedKeyUsage serverAuth and the given subjectAltNames, written as ca.crt,
tls.crt and tls.key (mode 0600). The API server verifies the certificate
against the caBundle by subjectAltName: for a Service that is
SERVICE.NAMESPACE.svc. Existing files are kept unless --force is given.`,
		Example: `  # For the in-cluster Service
  admitc certs --out tls --dns admitc.admission-system.svc --dns admitc.admission-system.svc.cluster.local

  # For a webhook on this machine
  admitc certs --out tls --dns localhost --ip 127.0.0.1`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return usageError(fmt.Errorf("--out is required: the directory to write ca.crt, tls.crt and tls.key into"))
			}
			req := certs.Request{DNSNames: dns, Days: days}
			for _, ip := range ips {
				parsed := net.ParseIP(ip)
				if parsed == nil {
					return usageError(fmt.Errorf("--ip %q is not an IP address", ip))
				}
				req.IPs = append(req.IPs, parsed)
			}
			b, err := certs.Generate(req)
			if err != nil {
				return usageError(err)
			}
			if err := certs.Write(out, b, force); err != nil {
				return usageError(err)
			}
			fmt.Fprintf(s.Out, "wrote %s/%s, %s/%s and %s/%s\n", out, certs.CAFile, out, certs.CertFile, out, certs.KeyFile)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory to write ca.crt, tls.crt and tls.key into")
	f.StringSliceVar(&dns, "dns", nil, "DNS subjectAltName (repeatable)")
	f.StringSliceVar(&ips, "ip", nil, "IP subjectAltName (repeatable)")
	f.IntVar(&days, "days", 365, "validity in days")
	f.BoolVar(&force, "force", false, "replace existing files")
	return cmd
}
