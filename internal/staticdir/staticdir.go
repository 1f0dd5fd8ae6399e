package staticdir

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	policyloader "k8s.io/kubernetes/pkg/admission/plugin/policy/manifest/loader"
	webhookloader "k8s.io/kubernetes/pkg/admission/plugin/webhook/manifest/loader"
	"sigs.k8s.io/yaml"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"

	"github.com/admitc/admitc/backends/static"
)

// Verify loads the tree in dir, which kube-apiserver sees as root, as
// kube-apiserver would, and returns every reason it would refuse to start.
func Verify(dir, root string) error {
	data, err := os.ReadFile(filepath.Join(dir, static.ConfigFile))
	if err != nil {
		return err
	}
	var cfg apiserverv1.AdmissionConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, static.ConfigFile), err)
	}
	if cfg.APIVersion != static.ConfigAPIVersion || cfg.Kind != "AdmissionConfiguration" {
		return fmt.Errorf("%s: want %s AdmissionConfiguration, got %s %s", filepath.Join(dir, static.ConfigFile), static.ConfigAPIVersion, cfg.APIVersion, cfg.Kind)
	}
	var errs []error
	for _, pc := range cfg.Plugins {
		if err := verifyPlugin(dir, root, pc); err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", pc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// verifyPlugin decodes one plugin's configuration and loads its directory.
func verifyPlugin(dir, root string, pc apiserverv1.AdmissionPluginConfiguration) error {
	i := slices.IndexFunc(static.Plugins, func(p static.Plugin) bool { return p.Name == pc.Name })
	if i < 0 {
		return fmt.Errorf("not an admission plugin with a staticManifestsDir")
	}
	p := static.Plugins[i]
	if pc.Configuration == nil {
		return fmt.Errorf("no configuration")
	}
	var conf struct {
		APIVersion         string `json:"apiVersion"`
		Kind               string `json:"kind"`
		KubeConfigFile     string `json:"kubeConfigFile,omitempty"`
		StaticManifestsDir string `json:"staticManifestsDir,omitempty"`
	}
	if err := yaml.UnmarshalStrict(pc.Configuration.Raw, &conf); err != nil {
		return err
	}
	if conf.APIVersion != static.ConfigAPIVersion || conf.Kind != p.ConfigKind {
		return fmt.Errorf("want configuration %s %s, got %s %s", static.ConfigAPIVersion, p.ConfigKind, conf.APIVersion, conf.Kind)
	}
	if conf.KubeConfigFile != "" && p.ConfigKind != "WebhookAdmissionConfiguration" {
		return fmt.Errorf("unknown field \"kubeConfigFile\"")
	}
	local, err := localDir(dir, root, conf.StaticManifestsDir)
	if err != nil {
		return err
	}
	return load(p, local)
}

// localDir is where staticManifestsDir, as kube-apiserver sees it, is in dir.
func localDir(dir, root, manifests string) (string, error) {
	if !path.IsAbs(manifests) {
		return "", fmt.Errorf("staticManifestsDir: Invalid value: %q: must be an absolute file path", manifests)
	}
	rel, ok := strings.CutPrefix(path.Clean(manifests), path.Clean(root)+"/")
	if !ok {
		return "", fmt.Errorf("staticManifestsDir %q is outside --static-root %q: admitc cannot check it", manifests, root)
	}
	local := filepath.Join(dir, filepath.FromSlash(rel))
	info, err := os.Stat(local)
	if err != nil {
		return "", fmt.Errorf("staticManifestsDir: Invalid value: %q: unable to read: %w", manifests, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("staticManifestsDir: Invalid value: %q: must be a directory", manifests)
	}
	return local, nil
}

// load runs kube-apiserver's loader for p on dir.
func load(p static.Plugin, dir string) error {
	var err error
	switch p.Name {
	case "ValidatingAdmissionPolicy":
		_, err = policyloader.LoadValidatingManifestsFromDirectory(dir)
	case "MutatingAdmissionPolicy":
		_, err = policyloader.LoadMutatingManifestsFromDirectory(dir)
	case "ValidatingAdmissionWebhook":
		_, err = webhookloader.LoadValidatingManifests(dir)
	case "MutatingAdmissionWebhook":
		_, err = webhookloader.LoadMutatingManifests(dir)
	}
	if err != nil {
		return fmt.Errorf("failed to load static manifests from %q: %w", dir, err)
	}
	return nil
}

// Strays lists the files in dir's plugin directories that kube-apiserver
// would load (.yaml, .yml, .json) but that are not among want
// (slash-separated paths relative to dir).
func Strays(dir string, want []string) ([]string, error) {
	var out []string
	for _, p := range static.Plugins {
		entries, err := os.ReadDir(filepath.Join(dir, p.Dir))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			rel := path.Join(p.Dir, e.Name())
			ext := strings.ToLower(path.Ext(e.Name()))
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") || slices.Contains(want, rel) {
				continue
			}
			out = append(out, filepath.Join(dir, filepath.FromSlash(rel)))
		}
	}
	return out, nil
}
