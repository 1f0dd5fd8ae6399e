package backends

import (
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/internal/dialect"
	"github.com/admitc/admitc/ir"
)

// ManagedByLabel marks every object admitc generates, so
// `kubectl delete ... -l app.kubernetes.io/managed-by=admitc` removes them.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedByValue is the value of ManagedByLabel.
const ManagedByValue = "admitc"

// NamespaceNameLabel is the label every namespace carries with its own name.
const NamespaceNameLabel = "kubernetes.io/metadata.name"

// Options are the settings every backend may read.
type Options struct {
	// Namespaces scope bindings and webhooks to these namespaces
	// (kubernetes.io/metadata.name In [...]); empty means cluster-wide
	// except kube-system for policies, and is refused for webhooks.
	Namespaces []string
	// KubeVersion is the oldest API server the output must run on.
	KubeVersion *version.Version
	// Webhook configures the webhook backend.
	Webhook WebhookOptions
	// Static configures the static backend.
	Static StaticOptions
}

// StaticOptions configure the static backend: manifests kube-apiserver
// loads from disk at startup (KEP-5793).
type StaticOptions struct {
	// Root is the directory kube-apiserver sees the output in: every
	// staticManifestsDir of the AdmissionConfiguration is under it.
	Root string
	// Webhooks sends the policies to admitc serve through static webhook
	// configurations (Webhook.URL) instead of static admission policies.
	Webhooks bool
}

// WebhookOptions configure the webhook backend.
type WebhookOptions struct {
	// Name names the configurations and prefixes the webhook names.
	Name string
	// Service and ServiceNamespace address the webhook's Service; URL, when
	// set, is used instead (for webhooks outside the cluster).
	Service, ServiceNamespace, URL string
	// CABundle is the PEM CA that signed the webhook's serving certificate.
	CABundle []byte
	// FailurePolicy is Ignore unless asked otherwise.
	FailurePolicy ir.FailurePolicy
	// TimeoutSeconds bounds each call (1 to 30).
	TimeoutSeconds int32
	// EphemeralContainers registers pods/ephemeralcontainers, so kubectl
	// debug cannot bypass the webhook.
	EphemeralContainers bool
	// Deployment adds the hardened Deployment, Service and PodDisruptionBudget.
	Deployment bool
	// Image is the admitc image the Deployment runs.
	Image string
	// AuditInterval, when set, has the Deployment's admitc serve audit the
	// objects its policies select every interval and keep openreports.io
	// Reports current (--audit-interval); its ClusterRole then may list
	// those objects and write Reports. Zero leaves both out.
	AuditInterval time.Duration
}

// Output is what a backend produced: objects in a fixed order, in one file
// named after the backend, or, for a backend whose output is a directory
// tree, Files (Objects is then unused).
type Output struct {
	Objects []runtime.Object
	Files   []OutputFile
}

// OutputFile is one file of a backend's directory tree.
type OutputFile struct {
	// Path is slash-separated and relative to the backend's directory.
	Path    string
	Objects []runtime.Object
}

// Backend turns a policy set into one enforcement format.
type Backend interface {
	// Name is the backend's name on the command line and its output file's stem.
	Name() string
	// Rejects says why the backend cannot express p, or "" when it can; a
	// policy that every selected backend rejects is reported, never dropped.
	Rejects(p *ir.Policy) string
	// Generate emits the objects for set, or diagnostics for what it cannot express.
	Generate(set *ir.PolicySet, opts Options) (Output, diag.Diagnostics)
}

// Errorf builds a diagnostic at an IR origin.
func Errorf(o ir.Origin, format string, args ...any) diag.Diagnostic {
	return diag.Diagnostic{Origin: o, Message: fmt.Sprintf(format, args...)}
}

// Labels returns the labels every generated object carries.
func Labels() map[string]string { return map[string]string{ManagedByLabel: ManagedByValue} }

// ForAPIServer is p with its CEL written for the API server of
// kubeVersion (dialect.ForAPIServer), or a diagnostic for each expression
// that cannot be, for the backends that emit admission policies.
func ForAPIServer(p *ir.Policy, kubeVersion *version.Version) (*ir.Policy, diag.Diagnostics) {
	out, refusals := dialect.ForAPIServer(p, kubeVersion)
	var diags diag.Diagnostics
	for _, r := range refusals {
		diags = append(diags, Errorf(r.Origin, "%s", apiServerRefusal(p, r)))
	}
	return out, diags
}

// APIServerRejects is the reason p's CEL cannot be written for the API
// server, or "".
func APIServerRejects(p *ir.Policy) string {
	if _, refusals := dialect.ForAPIServer(p, nil); len(refusals) > 0 {
		return apiServerRefusal(p, refusals[0])
	}
	return ""
}

func apiServerRefusal(p *ir.Policy, r dialect.Refusal) string {
	where := ""
	if r.Origin.Path != "" {
		where = fmt.Sprintf(" at %s:%d:%d (%s)", filepath.Base(r.Origin.File), r.Origin.Line, r.Origin.Column, r.Origin.Path)
	}
	return fmt.Sprintf("%s%s cannot be written for the API server: %s (the webhook backend runs it as written: admitc serve evaluates it in %s's CEL environment)", r.Construct, where, r.Why, dialectEngine(p.CEL))
}

func dialectEngine(d ir.CELDialect) string {
	if d == ir.CELKubernetes {
		return "the API server"
	}
	return "Kyverno"
}
