// Package webhook emits the ValidatingWebhookConfiguration and
// MutatingWebhookConfiguration that send admission requests to `admitc
// serve`, with the fail-safe defaults the design document asks for, and the
// hardened Deployment, Service and PodDisruptionBudget that run it, with
// the ServiceAccount and read-only ClusterRole and Roles it watches its
// cluster with.
// It refuses the configurations that caused the outage admitc exists to
// prevent. It imports ir, backends and k8s.io/api only.
package webhook

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/internal/diag"
	"github.com/admitc/admitc/internal/version"
	"github.com/admitc/admitc/ir"
)

// Domain suffixes webhook names: validate.NAME.admitc.dev.
const Domain = "admitc.dev"

// CAInjectAnnotation asks cert-manager's CA injector to fill caBundle when no
// --ca-bundle is given.
const CAInjectAnnotation = "cert-manager.io/inject-ca-from"

// Defaults are the fail-safe settings used unless asked otherwise.
var Defaults = backends.WebhookOptions{
	Name: "admitc", Service: "admitc", ServiceNamespace: "admission-system",
	FailurePolicy: ir.Ignore, TimeoutSeconds: 5, EphemeralContainers: true,
	Image: version.Image(),
}

// Backend is the webhook configuration backend.
type Backend struct{}

var _ backends.Backend = Backend{}

// Name implements backends.Backend.
func (Backend) Name() string { return "webhook" }

// Rejects implements backends.Backend: the webhook runs every policy but
// those whose reads of the cluster through Kyverno's libraries its
// Deployment could not serve (libraryRefusal).
func (Backend) Rejects(p *ir.Policy) string {
	if why := libraryRefusal(p); why != "" {
		return why
	}
	if !p.Imported() || len(p.UnresolvedKinds) > 0 {
		// Generate refuses a kind that did not resolve, at its place.
		return ""
	}
	for _, r := range p.MatchConstraints.ResourceRules {
		if slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*/*") {
			return "its matchConstraints name every resource (\"*\"); the webhook backend names resources so that no request it need not see depends on it"
		}
	}
	return ""
}

// Generate implements backends.Backend.
func (Backend) Generate(set *ir.PolicySet, opts backends.Options) (backends.Output, diag.Diagnostics) {
	var out backends.Output
	if err := Check(opts); err != nil {
		return out, diag.Diagnostics{{Message: err.Error()}}
	}
	var diags diag.Diagnostics
	for i := range set.Policies {
		diags = append(diags, backends.UnresolvedKinds(&set.Policies[i])...)
	}
	if len(diags) > 0 {
		return out, diags
	}
	w := opts.Webhook
	if vs := backends.ByKind(set, ir.Validating); len(vs) > 0 {
		out.Objects = append(out.Objects, validatingConfiguration(vs, opts))
	}
	if ms := backends.ByKind(set, ir.Mutating); len(ms) > 0 {
		out.Objects = append(out.Objects, mutatingConfiguration(ms, opts))
	}
	if w.Deployment && w.URL == "" {
		out.Objects = append(out.Objects, deploymentObjects(w, set.ParamSources(), libraryRules(set), auditRules(set, w))...)
	}
	return out, nil
}

// Check refuses the webhook settings that take clusters down: no namespace
// selector, kube-system or the webhook's own namespace in it, an
// out-of-range timeout, a plain-HTTP URL or a CA bundle that is not PEM.
func Check(opts backends.Options) error {
	w := opts.Webhook
	switch {
	case len(opts.Namespaces) == 0:
		return fmt.Errorf("webhook configurations need --namespace: without a namespaceSelector every namespace, kube-system and the webhook's own included, depends on the webhook being up, which is the outage admitc exists to prevent")
	case slices.Contains(opts.Namespaces, "kube-system"):
		return fmt.Errorf("refusing to send kube-system to a webhook: the control plane's own pods would depend on it")
	case w.URL == "" && slices.Contains(opts.Namespaces, w.ServiceNamespace):
		return fmt.Errorf("refusing to send the webhook's own namespace %q to it: while it is down its pods could not be recreated", w.ServiceNamespace)
	case w.TimeoutSeconds < 1 || w.TimeoutSeconds > 30:
		return fmt.Errorf("--timeout must be between 1 and 30 seconds, got %d", w.TimeoutSeconds)
	case w.FailurePolicy != ir.Ignore && w.FailurePolicy != ir.Fail:
		return fmt.Errorf("--failure-policy must be Ignore or Fail, got %q", w.FailurePolicy)
	case w.URL == "" && (w.Service == "" || w.ServiceNamespace == ""):
		return fmt.Errorf("webhook configurations need --service and --service-namespace, or --url")
	}
	if w.URL != "" {
		u, err := url.Parse(w.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("--url must be an https URL, got %q: the API server only calls webhooks over HTTPS", w.URL)
		}
	}
	if len(w.CABundle) > 0 {
		if err := checkPEM(w.CABundle); err != nil {
			return fmt.Errorf("--ca-bundle: %w", err)
		}
	}
	return nil
}

func checkPEM(data []byte) error {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return fmt.Errorf("not a PEM certificate")
	}
	if _, err := x509.ParseCertificate(block.Bytes); err != nil {
		return fmt.Errorf("not a valid certificate: %w", err)
	}
	return nil
}

func objectMeta(name string, w backends.WebhookOptions) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Labels: backends.Labels()}
	if len(w.CABundle) == 0 && w.URL == "" {
		m.Annotations = map[string]string{CAInjectAnnotation: w.ServiceNamespace + "/" + w.Name + "-tls"}
	}
	return m
}

func clientConfig(w backends.WebhookOptions, path string) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: w.CABundle}
	if w.URL != "" {
		u := w.URL + path
		cc.URL = &u
		return cc
	}
	port := int32(443)
	cc.Service = &admissionregistrationv1.ServiceReference{Namespace: w.ServiceNamespace, Name: w.Service, Path: &path, Port: &port}
	return cc
}

func rules(policies []*ir.Policy, w backends.WebhookOptions) []admissionregistrationv1.RuleWithOperations {
	var out []admissionregistrationv1.RuleWithOperations
	scope := admissionregistrationv1.NamespacedScope
	for _, r := range backends.RulesFor(policies, w.EphemeralContainers) {
		ops := make([]admissionregistrationv1.OperationType, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = admissionregistrationv1.OperationType(o)
		}
		out = append(out, admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{r.Version}, Resources: r.Resources, Scope: &scope},
		})
	}
	for _, p := range policies {
		if p.Imported() {
			for _, r := range apiconv.Rules(p.MatchConstraints.ResourceRules) {
				out = append(out, r.RuleWithOperations)
			}
		}
	}
	return mergedRules(out)
}

// mergedRules are rules with the rules that differ only in their resources
// written as one, in the order each first appears, resources in order and
// each once: the same requests match (a rule matches the product of its
// groups, versions, resources and operations), and policies that match the
// same kind (a ClusterPolicy's rules) name it once.
func mergedRules(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	var out []admissionregistrationv1.RuleWithOperations
	at := map[string]int{}
	for _, r := range rules {
		scope := ""
		if r.Scope != nil {
			scope = string(*r.Scope)
		}
		ops := make([]string, len(r.Operations))
		for i, o := range r.Operations {
			ops[i] = string(o)
		}
		key := strings.Join([]string{strings.Join(r.APIGroups, ","), strings.Join(r.APIVersions, ","), strings.Join(ops, ","), scope}, "\x00")
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			resources := r.Resources
			r.Resources = nil
			out = append(out, r)
			r.Resources = resources
		}
		for _, res := range r.Resources {
			if !slices.Contains(out[i].Resources, res) {
				out[i].Resources = append(out[i].Resources, res)
			}
		}
	}
	return out
}

func namespaceSelector(namespaces []string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: backends.NamespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: append([]string(nil), namespaces...)},
	}}
}

// common are the settings both webhooks share: the fail-safe defaults.
type common struct {
	failurePolicy admissionregistrationv1.FailurePolicyType
	sideEffects   admissionregistrationv1.SideEffectClass
	matchPolicy   admissionregistrationv1.MatchPolicyType
	timeout       int32
	selector      *metav1.LabelSelector
}

func commonSettings(opts backends.Options) *common {
	return &common{
		failurePolicy: admissionregistrationv1.FailurePolicyType(opts.Webhook.FailurePolicy),
		sideEffects:   admissionregistrationv1.SideEffectClassNone,
		matchPolicy:   admissionregistrationv1.Equivalent,
		timeout:       opts.Webhook.TimeoutSeconds,
		selector:      namespaceSelector(opts.Namespaces),
	}
}

func validatingConfiguration(policies []*ir.Policy, opts backends.Options) *admissionregistrationv1.ValidatingWebhookConfiguration {
	w, c := opts.Webhook, commonSettings(opts)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: objectMeta(w.Name, w),
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate." + w.Name + "." + Domain, ClientConfig: clientConfig(w, "/validate"), Rules: rules(policies, w),
			FailurePolicy: &c.failurePolicy, MatchPolicy: &c.matchPolicy, NamespaceSelector: c.selector,
			ObjectSelector: &metav1.LabelSelector{}, SideEffects: &c.sideEffects, TimeoutSeconds: &c.timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

func mutatingConfiguration(policies []*ir.Policy, opts backends.Options) *admissionregistrationv1.MutatingWebhookConfiguration {
	w, c := opts.Webhook, commonSettings(opts)
	reinvoke := admissionregistrationv1.NeverReinvocationPolicy
	for _, p := range policies {
		if p.ReinvocationPolicy == ir.ReinvokeIfNeeded {
			reinvoke = admissionregistrationv1.IfNeededReinvocationPolicy
		}
	}
	// Mutations never apply to pods/ephemeralcontainers: they judge no containers.
	noSub := w
	noSub.EphemeralContainers = false
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: objectMeta(w.Name, w),
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate." + w.Name + "." + Domain, ClientConfig: clientConfig(w, "/mutate"), Rules: rules(policies, noSub),
			FailurePolicy: &c.failurePolicy, MatchPolicy: &c.matchPolicy, NamespaceSelector: c.selector,
			ObjectSelector: &metav1.LabelSelector{}, SideEffects: &c.sideEffects, TimeoutSeconds: &c.timeout,
			AdmissionReviewVersions: []string{"v1"}, ReinvocationPolicy: &reinvoke,
		}},
	}
}
