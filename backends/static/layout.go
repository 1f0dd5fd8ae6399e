package static

import "strings"

// Suffix is the name suffix kube-apiserver reserves for static manifests:
// the API refuses to create an object named so, and the loader refuses an
// object named otherwise.
const Suffix = ".static.k8s.io"

// ConfigFile is the AdmissionConfiguration's file name, at the root of the
// tree; kube-apiserver reads it through --admission-control-config-file.
const ConfigFile = "admission-configuration.yaml"

// ManifestsFile is the one file admitc writes in each plugin directory.
const ManifestsFile = "manifests.yaml"

// DefaultRoot is where kube-apiserver sees the tree unless told otherwise.
const DefaultRoot = "/etc/kubernetes/admission"

// Plugin is an admission plugin that reads a staticManifestsDir.
type Plugin struct {
	// Name is the plugin's name in the AdmissionConfiguration.
	Name string
	// Dir is its directory under the root.
	Dir string
	// ConfigKind is the kind of its configuration (apiserver.config.k8s.io/v1).
	ConfigKind string
	// Kinds are the admissionregistration.k8s.io/v1 kinds its loader accepts
	// (each also as a List).
	Kinds []string
}

// Plugins are the four plugins with a staticManifestsDir, in output order.
var Plugins = []Plugin{
	{Name: "ValidatingAdmissionPolicy", Dir: "validating-policies", ConfigKind: "ValidatingAdmissionPolicyConfiguration",
		Kinds: []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}},
	{Name: "MutatingAdmissionPolicy", Dir: "mutating-policies", ConfigKind: "MutatingAdmissionPolicyConfiguration",
		Kinds: []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}},
	{Name: "ValidatingAdmissionWebhook", Dir: "validating-webhooks", ConfigKind: "WebhookAdmissionConfiguration",
		Kinds: []string{"ValidatingWebhookConfiguration"}},
	{Name: "MutatingAdmissionWebhook", Dir: "mutating-webhooks", ConfigKind: "WebhookAdmissionConfiguration",
		Kinds: []string{"MutatingWebhookConfiguration"}},
}

// PluginFor returns the plugin whose directory accepts kind.
func PluginFor(kind string) (Plugin, bool) {
	for _, p := range Plugins {
		for _, k := range p.Kinds {
			if k == kind {
				return p, true
			}
		}
	}
	return Plugin{}, false
}

// Name is name with the reserved suffix (unchanged when it has it already).
func Name(name string) string {
	if strings.HasSuffix(name, Suffix) {
		return name
	}
	return name + Suffix
}
