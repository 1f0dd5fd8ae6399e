package static

import (
	"encoding/json"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	policyconfigv1 "k8s.io/apiserver/pkg/admission/plugin/policy/config/apis/policyconfig/v1"
	webhookadmissionv1 "k8s.io/apiserver/pkg/admission/plugin/webhook/config/apis/webhookadmission/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"

	"github.com/admitc/admitc/backends"
)

// ConfigAPIVersion is the API version of the AdmissionConfiguration and of
// every plugin configuration in it.
const ConfigAPIVersion = "apiserver.config.k8s.io/v1"

// configuration is the AdmissionConfiguration that points each plugin with
// something to load at root/DIR. A plugin with nothing is left out: its
// directory may not exist, and kube-apiserver refuses to start on a
// staticManifestsDir that does not.
func configuration(root string, byDir map[string][]runtime.Object) (backends.OutputFile, error) {
	cfg := &apiserverv1.AdmissionConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: ConfigAPIVersion, Kind: "AdmissionConfiguration"}}
	for _, p := range Plugins {
		if len(byDir[p.Dir]) == 0 {
			continue
		}
		raw, err := json.Marshal(pluginConfiguration(p, path.Join(root, p.Dir)))
		if err != nil {
			return backends.OutputFile{}, err
		}
		cfg.Plugins = append(cfg.Plugins, apiserverv1.AdmissionPluginConfiguration{Name: p.Name, Configuration: &runtime.Unknown{Raw: raw}})
	}
	return backends.OutputFile{Path: ConfigFile, Objects: []runtime.Object{cfg}}, nil
}

// pluginConfiguration is p's configuration naming dir, in its own kind.
func pluginConfiguration(p Plugin, dir string) runtime.Object {
	meta := metav1.TypeMeta{APIVersion: ConfigAPIVersion, Kind: p.ConfigKind}
	switch p.ConfigKind {
	case "ValidatingAdmissionPolicyConfiguration":
		return &policyconfigv1.ValidatingAdmissionPolicyConfiguration{TypeMeta: meta, StaticManifestsDir: dir}
	case "MutatingAdmissionPolicyConfiguration":
		return &policyconfigv1.MutatingAdmissionPolicyConfiguration{TypeMeta: meta, StaticManifestsDir: dir}
	default:
		return &webhookadmissionv1.WebhookAdmission{TypeMeta: meta, StaticManifestsDir: dir}
	}
}
