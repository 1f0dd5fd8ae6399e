//go:build !serveonly

package cli

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/internal/migrate"
)

// MigrateOptions are the options of `admitc migrate`.
type MigrateOptions struct {
	Streams
	Paths      []string
	OutDir     string
	Output     string
	Namespaces []string
	// KyvernoFilters is --kyverno-filters (see policyFlags).
	KyvernoFilters string
	// CRDs is --crd (see policyFlags).
	CRDs []string
}

// NewMigrateCommand returns `admitc migrate`.
func NewMigrateCommand(s Streams) *cobra.Command {
	o := &MigrateOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "migrate [flags] FILE|DIR...",
		Short: "Translate Kyverno ClusterPolicies to ValidatingPolicies, MutatingPolicies and admission policies, with a report per file and rule",
		Long: `Reads Kyverno ClusterPolicies and Policies, ValidatingPolicies,
MutatingPolicies and admission policies, and writes for each input policy,
in a directory named after it:

  validatingpolicy.yaml            the successor policies.kyverno.io/v1
  namespacedvalidatingpolicy.yaml  ValidatingPolicy (NamespacedValidatingPolicy
  mutatingpolicy.yaml              for a namespaced Policy, MutatingPolicy)
  vap.yaml, map.yaml               the same rules as ValidatingAdmissionPolicies
                                   (MutatingAdmissionPolicies) and bindings,
                                   enforced by the API server without Kyverno
  .kyverno-test/kyverno-test.yaml  the policy's Kyverno test, rewritten for the
                                   successors, when one is found beside the input

Translated today: validate.cel, validate.pattern and anyPattern, validate.deny
and validate.foreach rules, JMESPath preconditions and context variables
(the subset in docs/kyverno-pattern-translation.md), and mutate rules
(patchStrategicMerge, patchesJson6902, foreach), validate.podSecurity and
Kyverno's CEL libraries that read nothing outside the request or the
cluster. Refused with the reason: a context entry loaded by an API call,
from an image registry or the global context, {{ }} variables in a
pattern's keys, generate, verifyImages, mutate targets and nested foreach
mutations, roles, Kyverno's http and image data libraries; a paramKind (a
context.configMap becomes one) has no ValidatingPolicy successor and is
written to vap.yaml only.

A ClusterPolicy with one rule keeps its name; with several, each rule is a
policy named POLICY-RULE (made a valid name where the rule's is not, and
said so). Kyverno's autogen is kept as spec.autogen when a ValidatingPolicy's
own autogen, read back, decides exactly as the ClusterPolicy's autogen rules
did; otherwise (a ClusterPolicy's autogen also covers ReplicationControllers
and kubectl debug's pods/ephemeralcontainers, which a ValidatingPolicy's
does not) each autogen rule is written out as its own policy with autogen
off, and the report says so. Actions map to validationActions (Enforce:
Deny; Audit: Audit, with Warn when spec.emitWarning is set).

The report lists every JSON and YAML file read (hidden directories are left
out): a file without a Kyverno or admission policy (artifacthub-pkg.yml, a
resource) is skipped; one that cannot be read or does not compile (a kind
admitc does not read, such as ImageValidatingPolicy or GeneratingPolicy) is
REFUSED with the reason, and the other files are still migrated. It lists
every rule: OK (translated), DIFFERS (translated, with what the successor
does not keep) or REFUSED (why), with the names of the policies written for
it in each file (the successors' differ from vap.yaml's POLICY.RULE). In a
rewritten test, the answers that
change with the kind change: a resource the rule's match or exclude leaves
out is skipped by the successor's match condition (skip), a CEL error is
an error rather than a fail, and a mutate rule's "no patches applied" skip
is the MutatingPolicy's pass.

vap.yaml and map.yaml leave out what a Kyverno installation keeps from its
policies (--kyverno-filters: the Helm chart's defaults, your Kyverno
ConfigMap, or none), as binding exclusions and one match condition; the
report says which. The successors do not: Kyverno applies its filters to
them itself. --namespace scopes every written policy; a namespace the
filters leave out is refused.

Without --out, the files go to stdout (each after a "# --- FILE ---" line)
and the report to stderr. With --out, the files replace the directory's as
one set (staged, then renamed into place; on failure the previous files are
left as they were) and the report goes to stdout.

Exit codes: 0 every rule translated, 1 a file or a rule was refused or a
rule translated with a difference (the files of the rest are written), 2 a
path that does not exist or holds no policy file, or an output directory
that cannot be written.`,
		Example: `  # Every Kyverno policy under policies/, into migrated/, with a report
  admitc migrate policies/ --out migrated/

  # One ClusterPolicy, printed
  admitc migrate examples/kyverno/disallow-latest-tag/policy.yaml

  # The report as JSON, for CI
  admitc migrate policies/ --out migrated/ -o json

  # Then prove the translation with Kyverno's own test files
  admitc verify migrated/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.OutDir, "out", "", "write the files into this directory (default: stdout, the report on stderr)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "report format: text or json")
	cmd.Flags().StringSliceVarP(&o.Namespaces, "namespace", "n", nil, "scope every written policy to these namespaces (kubernetes.io/metadata.name In ...): the successors' matchConstraints and the admission policies' bindings")
	cmd.Flags().StringVar(&o.KyvernoFilters, "kyverno-filters", "default", kyvernoFiltersUsage+"; vap.yaml and map.yaml leave out what they leave out (the successors do not: Kyverno applies them itself)")
	cmd.Flags().StringSliceVar(&o.CRDs, "crd", nil, crdUsage+" (the report says so under the policy, and the successors are still written)")
	return cmd
}

// Validate checks the flags.
func (o *MigrateOptions) Validate() error {
	if o.Output != "text" && o.Output != "json" {
		return usageError(fmt.Errorf("--output must be text or json, got %q", o.Output))
	}
	return nil
}

// Run migrates, writes the files and the report.
func (o *MigrateOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	filters, err := kyvernoFilters(o.KyvernoFilters, false)
	if err != nil {
		return err
	}
	crds, err := readCRDs(o.CRDs)
	if err != nil {
		return err
	}
	res, err := migrate.Run(ctx, o.Paths, migrate.Options{Filters: filters, Namespaces: o.Namespaces, CRDs: crds})
	if err != nil {
		return usageError(filteredNamespaceError(err, filters))
	}
	files := make([]generate.File, len(res.Files))
	for i, f := range res.Files {
		files[i] = generate.File{Name: f.Path, Data: f.Data, Header: "# --- " + f.Path + " ---\n"}
	}
	report := o.Out
	if o.OutDir == "" {
		report = o.Err
		var buf bytes.Buffer
		for i, f := range files {
			if i > 0 {
				buf.WriteString("---\n")
			}
			buf.WriteString(f.Header)
			buf.Write(f.Data)
		}
		if _, err := o.Out.Write(buf.Bytes()); err != nil {
			return err
		}
	} else if err := writeDir(o.OutDir, files); err != nil {
		return usageError(err)
	}
	if o.Output == "json" {
		err = res.Report.WriteJSON(report)
	} else {
		err = res.Report.WriteText(report)
	}
	if err != nil {
		return err
	}
	if !res.Report.Passed() {
		return failed
	}
	return nil
}
