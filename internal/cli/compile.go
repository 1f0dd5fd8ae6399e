//go:build !serveonly

package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/backends/static"
	"github.com/admitc/admitc/backends/webhook"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/ir"
)

// ExampleNamespace is the namespace the built-in example set is compiled for.
const ExampleNamespace = "shop"

// CompileOptions are the options of `admitc compile` and its shortcuts.
type CompileOptions struct {
	Streams
	Policies    policyFlags
	Backends    []string
	Namespaces  []string
	KubeVersion string
	OutDir      string
	Check       string
	WithIR      bool
	KeepGoing   bool
	Webhook     webhookFlags
	Static      backends.StaticOptions

	// requireNamespace refuses to run without --namespace (webhook-config:
	// a webhook's namespaceSelector must be chosen, never defaulted).
	requireNamespace bool

	opts backends.Options
}

// webhookFlags are the webhook backend's settings as flags.
type webhookFlags struct {
	backends.WebhookOptions
	CABundleFile  string
	FailurePolicy string
	Timeout       int32
}

// add registers the webhook flags. compile --backend webhook and
// webhook-config share them with the same defaults, so the same flags print
// the same objects.
func (w *webhookFlags) add(fs *pflag.FlagSet) {
	d := webhook.Defaults
	fs.StringVar(&w.Name, "name", d.Name, "webhook configuration name (webhooks are validate.NAME.admitc.dev and mutate.NAME.admitc.dev)")
	fs.StringVar(&w.Service, "service", d.Service, "webhook Service name")
	fs.StringVar(&w.ServiceNamespace, "service-namespace", d.ServiceNamespace, "namespace the webhook runs in (never sent to the webhook)")
	fs.StringVar(&w.URL, "url", "", "call the webhook at this https URL instead of a Service (for a webhook outside the cluster)")
	fs.StringVar(&w.CABundleFile, "ca-bundle", "", "PEM file with the CA that signed the webhook's certificate (default: cert-manager CA injection)")
	fs.StringVar(&w.FailurePolicy, "failure-policy", string(d.FailurePolicy), "Ignore (fail open) or Fail (fail closed)")
	fs.Int32Var(&w.Timeout, "timeout", d.TimeoutSeconds, "seconds the API server waits for the webhook (1-30)")
	fs.BoolVar(&w.EphemeralContainers, "ephemeral-containers", d.EphemeralContainers, "also send pods/ephemeralcontainers (kubectl debug) to the validating webhook")
	fs.StringVar(&w.Image, "image", d.Image, "admitc image for the webhook Deployment")
	fs.DurationVar(&w.AuditInterval, "audit-interval", 0, "the Deployment's admitc serve audits the objects the policies select every interval and keeps openreports.io Reports current; its ClusterRole then may list those resources and write Reports (0: off, and neither is granted)")
	fs.BoolVar(&w.Deployment, "deployment", true, "also emit the hardened Deployment, Service and PodDisruptionBudget, and the ServiceAccount and read-only ClusterRole (and Roles) it watches namespaces and parameter objects with (--deployment=false for the configurations only)")
}

func (w *webhookFlags) complete() (backends.WebhookOptions, error) {
	out := w.WebhookOptions
	out.FailurePolicy = ir.FailurePolicy(w.FailurePolicy)
	out.TimeoutSeconds = w.Timeout
	if w.CABundleFile != "" {
		data, err := os.ReadFile(w.CABundleFile)
		if err != nil {
			return out, fmt.Errorf("read --ca-bundle: %w", err)
		}
		out.CABundle = data
	}
	return out, nil
}

// NewCompileCommand returns `admitc compile`.
func NewCompileCommand(s Streams) *cobra.Command {
	o := &CompileOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "compile [flags]",
		Short: "Compile policies to ValidatingAdmissionPolicy, MutatingAdmissionPolicy and webhook configurations",
		Long: `Compiles policy files into every enforcement format: one YAML file per
backend in --out (or all to stdout), objects in a fixed order, identical bytes
for identical input. --check compares with a directory instead of writing and
exits 1 with a unified diff when they differ, so CI catches a policy change
whose generated output was not regenerated.

With no --policies and no --namespace it compiles the built-in example set
for namespace shop.

Apply one enforcement path per cluster, never two: vap and map
(ValidatingAdmissionPolicy, MutatingAdmissionPolicy) are enforced by the API
server itself; webhook is the same policies sent to admitc serve; kyverno (and
the opt-in kyverno-cel) are for clusters that run Kyverno. Applying vap and
webhook together enforces every policy twice. The opt-in gatekeeper backend
(a ConstraintTemplate with a K8sNativeValidation CEL entry and its Constraint
per validating policy) is for clusters that run Gatekeeper: it inlines
settings into the CEL rather than use a paramKind, so nothing waits for a
parameter CRD to be served (gatekeeper#4530), and refuses policies with one. On stdout, when several backends
are printed, each backend's section starts with a comment such as
"# --- backend: vap (...) ---".

The opt-in static backend (--backend static) writes, under static/, the
manifests kube-apiserver loads from disk before its first request
(Kubernetes 1.36+): admission-configuration.yaml for
--admission-control-config-file and one directory per admission plugin, the
objects named NAME.static.k8s.io. --static-root is where kube-apiserver sees
that directory. Every tree is first loaded with kube-apiserver's own loaders;
--check also reports a file in a plugin directory that admitc did not write.

Output does not depend on the working directory or on how a --policies path
is spelled (relative, absolute, ./): origins in the output (ir.json, Kyverno's
admitc.dev/origin annotation) name a policy file by its base name only.
Error messages keep the path as given.

--out replaces the directory's files as one set: every file is staged next to
its target and renamed into place; if anything fails (a full disk, a name
taken by a directory) the previous files are left as they were, byte for byte.
Files are written with mode 0644 (generated manifests are meant to be
committed), whatever mode a replaced file had.

Kyverno ClusterPolicies, Policies, ValidatingPolicies and MutatingPolicies
are read too. A rule that needs what admitc cannot evaluate (a context API
call, an image registry, Kyverno's http library; see admitc migrate --help
for the list) is an error that names the feature; --keep-going leaves such
rules out, emits the rest and lists what it skipped on stderr.

Exit codes: 0 written (or up to date), 1 --check found differences, 2 a policy
does not compile or a backend cannot express it.`,
		Example: `  # The built-in example set, every backend, to stdout
  admitc compile

  # Your policies into deploy/admission, scoped to two namespaces
  admitc compile --policies policies/ --namespace shop --namespace payments --out deploy/admission

  # In CI: fail when deploy/admission is stale
  admitc compile --policies policies/ --namespace shop --namespace payments --check deploy/admission

  # Kyverno policies: emit what admitc can, list the rules it skipped
  admitc compile --policies kyverno/ --backend vap --keep-going

  # MutatingAdmissionPolicy for a 1.35 cluster (v1beta1)
  admitc compile --policies examples/policies/labels-policy.json --backend map --kube-version 1.35`,
		Args: cobra.NoArgs,
		RunE: o.runE,
	}
	f := cmd.Flags()
	o.Policies.add(f)
	f.StringSliceVarP(&o.Backends, "backend", "b", []string{"all"}, "backends to run: all or a list of "+strings.Join(generate.Names(), ", "))
	o.addScopeFlags(f)
	f.StringVarP(&o.OutDir, "out", "o", "", "write one file per backend into this directory instead of stdout")
	f.StringVar(&o.Check, "check", "", "compare with the files in this directory; exit 1 with a diff when they differ")
	f.BoolVar(&o.WithIR, "ir", false, "also write ir.json, the compiled intermediate representation")
	f.BoolVar(&o.KeepGoing, "keep-going", false, "emit what can be emitted: leave out the rules and policies that need what admitc cannot evaluate (a Kyverno rule with an API call, say), list them on stderr, and exit 0")
	o.Webhook.add(f)
	f.StringVar(&o.Static.Root, "static-root", static.DefaultRoot, "static backend: the directory kube-apiserver sees the static/ output in (each plugin's staticManifestsDir is under it)")
	f.BoolVar(&o.Static.Webhooks, "static-webhook", false, "static backend: send the policies to admitc serve at --url through static webhook configurations instead of static admission policies")
	cmd.MarkFlagsMutuallyExclusive("out", "check")
	_ = cmd.RegisterFlagCompletionFunc("backend", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return append([]string{"all"}, generate.Names()...), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func (o *CompileOptions) addScopeFlags(f *pflag.FlagSet) {
	f.StringSliceVarP(&o.Namespaces, "namespace", "n", nil, "namespaces the bindings and webhooks apply to (kubernetes.io/metadata.name In ...)")
	f.StringVar(&o.KubeVersion, "kube-version", "1.36", "oldest Kubernetes version the output must run on (MutatingAdmissionPolicy: v1 from 1.36, v1beta1 for 1.34-1.35)")
}

// Complete parses the flags into backend options.
func (o *CompileOptions) Complete() error {
	if o.requireNamespace && len(o.Namespaces) == 0 {
		return usageError(errors.New("webhook-config needs --namespace: name every namespace whose requests go to the webhook, for example --namespace shop --namespace payments (kube-system and the webhook's own namespace are refused)"))
	}
	kv, err := version.ParseGeneric(o.KubeVersion)
	if err != nil {
		return usageError(fmt.Errorf("--kube-version: %w", err))
	}
	o.opts.KubeVersion = version.MajorMinor(kv.Major(), kv.Minor())
	o.opts.Namespaces = o.Namespaces
	o.opts.Static = o.Static
	if len(o.Policies.Paths) == 0 && len(o.Namespaces) == 0 {
		o.opts.Namespaces = []string{ExampleNamespace}
	}
	if o.opts.Webhook, err = o.Webhook.complete(); err != nil {
		return usageError(err)
	}
	return nil
}

// Run compiles and writes, or checks.
func (o *CompileOptions) Run() error {
	o.Policies.Notes = o.Err
	srcs, err := o.Policies.sources()
	if err != nil {
		return usageError(err)
	}
	filters, err := o.Policies.filters()
	if err != nil {
		return err
	}
	crds, err := o.Policies.crds()
	if err != nil {
		return err
	}
	res, diags, err := generate.Run(generate.Request{Sources: srcs, Backends: o.Backends, Options: o.opts, WithIR: o.WithIR, KeepGoing: o.KeepGoing, KyvernoFilters: filters, CRDs: crds})
	if err != nil {
		return usageError(filteredNamespaceError(err, filters))
	}
	if len(diags) > 0 {
		return usageError(fmt.Errorf("cannot compile:\n%s", diags.Error()))
	}
	printNotes(o.Err, res.Set)
	printSkipped(o.Err, res.Set)
	if err := verifyStatic(res.Files, o.opts.Static.Root); err != nil {
		return usageError(err)
	}
	switch {
	case o.Check != "":
		same, err := checkDir(o.Streams.Out, o.Check, res.Files)
		if err != nil {
			return usageError(err)
		}
		sound, err := checkStaticDir(o.Streams.Out, o.Check, o.opts.Static.Root, res.Files)
		if err != nil {
			return usageError(err)
		}
		if !same || !sound {
			fmt.Fprintf(o.Err, "%s is out of date: run the same command with --out %s and commit the result\n", o.Check, o.Check)
			return failed
		}
		return nil
	case o.OutDir != "":
		if err := refuseStrays(o.OutDir, res.Files); err != nil {
			return usageError(err)
		}
		if err := writeDir(o.OutDir, res.Files); err != nil {
			return usageError(err)
		}
		return nil
	default:
		return writeStdout(o.Streams.Out, res.Files)
	}
}

// NewVAPCommand returns `admitc vap`, the design document's shortcut for
// `admitc compile --backend vap`.
func NewVAPCommand(s Streams) *cobra.Command {
	o := &CompileOptions{Streams: s, Backends: []string{"vap"}}
	cmd := &cobra.Command{
		Use:   "vap [flags]",
		Short: "Print ValidatingAdmissionPolicies and bindings (compile --backend vap)",
		Example: `  admitc vap --policies examples/policies/cel-policies.json --namespace shop > vap.yaml
  kubectl apply -f vap.yaml`,
		Args: cobra.NoArgs,
		RunE: o.runE,
	}
	o.Policies.add(cmd.Flags())
	o.addScopeFlags(cmd.Flags())
	return cmd
}

// runE completes the options and compiles.
func (o *CompileOptions) runE(*cobra.Command, []string) error {
	if err := o.Complete(); err != nil {
		return err
	}
	return o.Run()
}

// NewWebhookConfigCommand returns `admitc webhook-config`, the design
// document's shortcut for `admitc compile --backend webhook`.
func NewWebhookConfigCommand(s Streams) *cobra.Command {
	o := &CompileOptions{Streams: s, Backends: []string{"webhook"}, requireNamespace: true}
	cmd := &cobra.Command{
		Use:   "webhook-config [flags]",
		Short: "Print fail-safe Validating/MutatingWebhookConfigurations (compile --backend webhook)",
		Long: `Prints the webhook configurations for admitc serve with fail-safe defaults:
failurePolicy Ignore, sideEffects None, timeoutSeconds 5, matchPolicy
Equivalent, a required namespaceSelector, rules that name resources. It
refuses kube-system and the webhook's own namespace in the selector, and
needs --namespace: it never defaults to the example namespace.

It prints exactly what compile --backend webhook prints for the same flags:
the configurations and the hardened Deployment, Service and
PodDisruptionBudget that run admitc serve, with the ServiceAccount it runs
as, a ClusterRole that reads namespaces and a Role in each namespace a
paramRef names: they read exactly the parameter objects the paramRefs name
or select (--deployment=false for the configurations only; nothing
but the configurations with --url).`,
		Example: `  admitc webhook-config --name admitc --service admitc --service-namespace admission-system \
    --namespace shop --ca-bundle tls/ca.crt > webhooks.yaml

  # The configurations only, for a webhook deployed some other way
  admitc webhook-config --namespace shop --deployment=false`,
		Args: cobra.NoArgs,
		RunE: o.runE,
	}
	o.Policies.add(cmd.Flags())
	o.addScopeFlags(cmd.Flags())
	o.Webhook.add(cmd.Flags())
	return cmd
}

// filteredNamespaceError explains a --namespace that Kyverno's filters
// leave out; any other error is returned as it is.
func filteredNamespaceError(err error, filters *kyverno.Filters) error {
	var scope *backends.OutOfScopeError
	if errors.As(err, &scope) && filters != nil && slices.Contains(filters.ExcludedNamespaces(), scope.Namespace) {
		return fmt.Errorf("--namespace %s: Kyverno's resource filters leave that namespace out (%s), so Kyverno never judges requests there and neither would the translated policies; drop it from --namespace, or judge it anyway with --kyverno-filters none", scope.Namespace, filters.Source)
	}
	return err
}
