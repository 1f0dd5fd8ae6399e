//go:build !serveonly

package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/admitc/admitc/internal/audit"
	"github.com/admitc/admitc/internal/audit/openreports"
	"github.com/admitc/admitc/internal/render"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime/cluster"
)

// ExitInterrupted is audit's exit code after Ctrl-C (128 + SIGINT, as a
// shell reports it): the run stopped cleanly and wrote only what it
// covered to stdout.
const ExitInterrupted = 130

// AuditOptions are the options of `admitc audit`.
type AuditOptions struct {
	Streams
	Policies       policyFlags
	Kubeconfig     string
	Context        string
	Output         string
	OutDir         string
	Apply          bool
	AsDeny         bool
	ReportName     string
	ReportMaxBytes int
	MaxFailures    int
	PageSize       int64
	Workers        int
	Namespaces     []string
	// Progress forces the progress line on (true) or off (false); unset,
	// it is on when stderr is a terminal.
	Progress *bool

	set        *ir.PolicySet
	restConfig *rest.Config
}

// auditOutputs are the formats of -o.
var auditFormats = []string{"table", "json", "junit", "openreports"}

// NewAuditCommand returns `admitc audit`.
func NewAuditCommand(s Streams) *cobra.Command {
	o := &AuditOptions{Streams: s}
	cmd := &cobra.Command{
		Use:   "audit --kubeconfig FILE [--policies PATH...] [flags]",
		Short: "Judge the objects a cluster already stores with the policies, and report which would be denied",
		Long:  auditLong,
		Example: `  # Which stored objects would the Pod Security policies deny, were they enforced?
  admitc audit --kubeconfig ~/.kube/config -p examples/kyverno-pattern/ --as-deny

  # openreports.io Reports, as files and in the cluster (Policy Reporter reads them)
  admitc audit -p policies/ -o openreports --out reports/ --apply

  # In CI: JUnit, exit 1 when something would be denied
  admitc audit -p policies/ -o junit > audit.xml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run(ctx)
		},
	}
	f := cmd.Flags()
	o.Policies.add(f)
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "the cluster to audit (default: inside a pod its own API server, else $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "the kubeconfig context to use (default: its current context)")
	f.StringVarP(&o.Output, "output", "o", "table", "what to print: table, json, junit or openreports (the Reports as YAML)")
	f.StringVar(&o.OutDir, "out", "", "also write the openreports.io Reports into this directory, one file per Report (report-NAMESPACE.yaml, clusterreport.yaml)")
	f.BoolVar(&o.Apply, "apply", false, "also write the Reports to the cluster with server-side apply (unchanged ones are skipped; admitc's Reports of namespaces with no result left are deleted)")
	f.BoolVar(&o.AsDeny, "as-deny", false, "judge every binding as if its actions were [Deny]: what would break once every policy is enforced")
	f.StringVar(&o.ReportName, "report-name", openreports.DefaultName, "name of the Reports and of the ClusterReport")
	f.IntVar(&o.ReportMaxBytes, "report-max-bytes", openreports.DefaultMaxBytes, "size cap of each Report: the most severe results are listed first, the rest counted in its summary")
	f.IntVar(&o.MaxFailures, "max-failures", 5, "failures the table lists under each policy")
	f.StringSliceVarP(&o.Namespaces, "namespace", "n", nil, "namespaces the policies in admitc's own format apply to, as admitc compile --namespace scopes their bindings (default: every namespace but kube-system); imported policies keep their own bindings")
	f.Int64Var(&o.PageSize, "page-size", audit.DefaultPageSize, "objects per LIST request (limit)")
	f.IntVar(&o.Workers, "workers", 0, "objects judged at once (0: GOMAXPROCS)")
	return cmd
}

const auditLong = `Lists every object the policies' bindings select from the API server, with
paginated LISTs (limit and continue) per resource, and judges each with the
engine admitc serve runs, as the API server would judge the object if it
were created now: match rules, namespace and object selectors, exclusions,
match conditions and parameter objects (paramRef) as the API server
resolves them, namespaces and parameter objects read from the cluster.
A policy that matches only UPDATE judges the object as an UPDATE whose old
object is the object itself, and the report says so. A policy that reads
what only a request carries (request.userInfo, authorizer, request.dryRun,
request.options) is reported as skipped with the reason, as Kyverno's
background scans leave such rules to admission. A policy that matches only
DELETE or CONNECT judges no stored object and is listed as not audited.

Objects are judged as they stream in, by a worker pool over GOMAXPROCS;
memory does not grow with their number. A progress line is written to
stderr when it is a terminal. Ctrl-C stops cleanly: the table then covers
the objects judged so far, and says so; no Report is written.

--as-deny judges every binding as if its actions were [Deny]. -o table
(the default) prints per policy the objects passed, failed, errored and
skipped and how many would be denied, with the first failures; -o json one
document with every selected object's results; -o junit one testsuite per
resource; -o openreports the openreports.io/v1alpha1 Reports: one Report per
namespace and one ClusterReport for cluster-scoped objects, with summary
counts, source admitc, policy, rule, result, message, resources, and the
policy's policies.kyverno.io/severity and category annotations. Each
Report is kept under --report-max-bytes; results beyond it are counted in
its summary and in its admitc.dev/results-not-listed annotation. --out DIR
writes the Reports as files (all replaced as one set, never half-written),
--apply writes them to the cluster with server-side apply, skipping those
whose results did not change.

A LIST the credentials may not make is reported for its resource, and the
audit goes on with the next.

Exit codes: 0 nothing would be denied and every resource was listed; 1
something would be denied, or a resource could not be listed; 2 bad input
(a policy that does not compile, no reachable API server, refused
credentials, a kind the API server does not serve), with nothing written;
130 interrupted.`

// Validate checks the flags.
func (o *AuditOptions) Validate() error {
	switch {
	case !contains(auditFormats, o.Output):
		return usageError(fmt.Errorf("--output must be one of table, json, junit, openreports; got %q", o.Output))
	case o.ReportMaxBytes < 4096:
		return usageError(fmt.Errorf("--report-max-bytes %d: want 4096 or more", o.ReportMaxBytes))
	case o.PageSize < 1:
		return usageError(fmt.Errorf("--page-size %d: want 1 or more objects", o.PageSize))
	case o.Workers < 0:
		return usageError(fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) or more", o.Workers))
	case o.MaxFailures < 0:
		return usageError(fmt.Errorf("--max-failures %d: want 0 or more", o.MaxFailures))
	}
	return nil
}

// Complete compiles the policies and finds the connection to the API
// server.
func (o *AuditOptions) Complete() error {
	o.Policies.Notes = o.Err
	var err error
	if o.set, err = o.Policies.compile(nil); err != nil {
		return err
	}
	releaseCompileCaches()
	if o.restConfig != nil {
		return nil
	}
	if o.restConfig, err = auditRESTConfig(o.Kubeconfig, o.Context); err != nil {
		return usageError(err)
	}
	return nil
}

// auditRESTConfig is the connection: --kubeconfig (and --context), else
// inside a pod the pod's own API server, else kubectl's default
// (KUBECONFIG, ~/.kube/config).
func auditRESTConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" && context == "" && cluster.InPod() {
		return cluster.RESTConfig("")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	switch {
	case err != nil && kubeconfig != "":
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	case err != nil:
		return nil, fmt.Errorf("no cluster to audit: give --kubeconfig (%w)", err)
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// wantsReports says whether the Reports are built.
func (o *AuditOptions) wantsReports() bool {
	return o.Output == "openreports" || o.OutDir != "" || o.Apply
}

// Run audits the cluster and writes the outputs.
func (o *AuditOptions) Run(ctx context.Context) error {
	limitToContainer()
	a, err := audit.New(o.set, audit.Options{AsDeny: o.AsDeny, Workers: o.Workers, Path: runtimePath(o.Policies.Engine), Namespaces: o.Namespaces})
	if err != nil {
		return usageError(err)
	}
	clients, err := newAuditClients(o.restConfig)
	if err != nil {
		return usageError(err)
	}
	targets, err := clients.plan(a, o.Apply)
	if err != nil {
		return usageError(err)
	}
	state, err := auditState(ctx, o.restConfig, o.set)
	if err != nil {
		return o.stopped(ctx, usageError(err))
	}
	if err := unservedLibraries(o.set, state); err != nil {
		return usageError(err)
	}
	out, err := o.newOutputs(a)
	if err != nil {
		return err
	}
	defer out.discard()
	in := audit.Input{Targets: targets, Lister: audit.PagedLister{Client: clients.dynamic, PageSize: o.PageSize}, State: state, Progress: &audit.Progress{}}
	stopProgress := o.showProgress(in.Progress)
	cov, err := a.Run(ctx, in, out.sinks())
	stopProgress()
	afterJudging(a)
	if err != nil {
		return clients.explainRun(err)
	}
	return o.finish(ctx, clients, out, cov)
}

// stopped turns an error after Ctrl-C into the interruption it is.
func (o *AuditOptions) stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintln(o.Err, "interrupted before any object was listed")
		return &ExitError{Code: ExitInterrupted}
	}
	return err
}

// explainRun rewords an error that stopped a run: credentials refused
// mid-run (a token that expired) are bad input.
func (c *auditClients) explainRun(err error) error {
	if apierrors.IsUnauthorized(err) {
		return usageError(c.explain(err))
	}
	return err
}

// finish writes the outputs of a finished or interrupted run and decides
// the exit code.
func (o *AuditOptions) finish(ctx context.Context, clients *auditClients, out *auditOutputs, cov *audit.Coverage) error {
	if cov.Interrupted {
		if o.Output == "table" {
			if err := audit.WriteTable(o.Out, out.tally, cov, o.AsDeny); err != nil {
				return err
			}
		}
		fmt.Fprintf(o.Err, "interrupted: %d object(s) judged, %s; nothing else written\n", cov.Judged(), coverageLine(cov))
		return &ExitError{Code: ExitInterrupted}
	}
	if err := out.write(o, cov); err != nil {
		return err
	}
	if o.Apply {
		if err := o.apply(ctx, clients, out, cov); err != nil {
			return err
		}
	}
	if out.tally.Denied > 0 || !cov.Complete() {
		return failed
	}
	return nil
}

// coverageLine says, per resource, how far the run got.
func coverageLine(cov *audit.Coverage) string {
	s := ""
	for i, r := range cov.Resources {
		if i > 0 {
			s += ", "
		}
		switch {
		case r.Complete:
			s += fmt.Sprintf("%s complete (%d)", r.Target, r.Judged)
		case r.Listed == 0:
			s += fmt.Sprintf("%s not reached", r.Target)
		default:
			s += fmt.Sprintf("%s: the first %d", r.Target, r.Judged)
		}
	}
	return s
}

// apply writes the Reports to the cluster and says what it did.
func (o *AuditOptions) apply(ctx context.Context, clients *auditClients, out *auditOutputs, cov *audit.Coverage) error {
	set, err := out.reports.Reports()
	if err != nil {
		return err
	}
	done, err := openreports.Applier{Client: clients.reports, Name: o.ReportName}.Apply(ctx, set, cov.Complete())
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Err, "reports: %d applied, %d unchanged, %d deleted\n", done.Applied, done.Unchanged, done.Deleted)
	return nil
}

// showProgress writes a progress line to stderr every 250ms while the run
// goes on, when stderr is a terminal (or --progress says so); the
// returned function stops it and clears the line.
func (o *AuditOptions) showProgress(p *audit.Progress) func() {
	if !o.progressOn() {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(o.Err, "\r\033[K")
				return
			case <-tick.C:
				fmt.Fprintf(o.Err, "\r\033[Kaudit: %s", progressLine(p, time.Since(start)))
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// progressLine is the progress line's text.
func progressLine(p *audit.Progress, elapsed time.Duration) string {
	resource, _ := p.Resource.Load().(string)
	judged := p.Judged.Load()
	return fmt.Sprintf("listing %s; %d listed, %d judged (%.0f/s), %d would be denied", resource, p.Listed.Load(), judged,
		float64(judged)/max(elapsed.Seconds(), 0.001), p.Denied.Load())
}

// progressOn says whether to show the progress line.
func (o *AuditOptions) progressOn() bool {
	if o.Progress != nil {
		return *o.Progress
	}
	return isTerminal(o.Err)
}

// writeReportFiles writes the Reports into dir as one set, rendering each
// when it is written (50 Reports at the size cap take tens of MB as YAML).
func writeReportFiles(dir string, set *openreports.Set) error {
	objs := set.Objects()
	names := make([]string, len(objs))
	for i, obj := range objs {
		names[i] = openreports.FileName(obj)
	}
	if err := (setWriter{rename: os.Rename}).writeEach(dir, names, func(i int) ([]byte, error) { return render.Object(objs[i]) }); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// afterJudging drops the engines, gives the memory judging took back to
// the OS, and has the collector keep the heap nearer to what is live
// while the outputs are made: the Reports are built and rendered at the
// end, and their garbage would otherwise grow the heap to twice what they
// hold (5,000 pods, 40 policies, --out: 250 against 305 MiB peak RSS, the
// writing 2 s longer). A GOGC the user set is kept.
func afterJudging(a *audit.Auditor) {
	a.ForgetEngines()
	debug.FreeOSMemory()
	defaultGCPercent(50)
}
