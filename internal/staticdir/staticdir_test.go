package staticdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyRefusesWhatKubeAPIServerRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		err    string
	}{
		"relative directory": {
			config: "  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: ValidatingAdmissionPolicyConfiguration\n    staticManifestsDir: validating-policies\n",
			err:    `plugin ValidatingAdmissionPolicy: staticManifestsDir: Invalid value: "validating-policies": must be an absolute file path`,
		},
		"missing directory": {
			config: "  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: ValidatingAdmissionPolicyConfiguration\n    staticManifestsDir: /root/missing\n",
			err:    `plugin ValidatingAdmissionPolicy: staticManifestsDir: Invalid value: "/root/missing": unable to read: stat DIR/missing: no such file or directory`,
		},
		"another plugin's configuration": {
			config: "  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    staticManifestsDir: /root/validating-policies\n",
			err:    "plugin ValidatingAdmissionPolicy: want configuration apiserver.config.k8s.io/v1 ValidatingAdmissionPolicyConfiguration, got apiserver.config.k8s.io/v1 WebhookAdmissionConfiguration",
		},
		"unknown field": {
			config: "  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: ValidatingAdmissionPolicyConfiguration\n    staticManifestDir: /root/validating-policies\n",
			err:    `plugin ValidatingAdmissionPolicy: error unmarshaling JSON: while decoding JSON: json: unknown field "staticManifestDir"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "validating-policies"), 0o755))
			cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ValidatingAdmissionPolicy\n" + tc.config
			require.NoError(t, os.WriteFile(filepath.Join(dir, "admission-configuration.yaml"), []byte(cfg), 0o644))
			err := Verify(dir, "/root")
			require.Error(t, err)
			assert.Equal(t, strings.ReplaceAll(tc.err, "DIR", dir), err.Error())
		})
	}
}

func TestVerifyAcceptsAnEmptyPluginDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "validating-policies"), 0o755))
	cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ValidatingAdmissionPolicy\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: ValidatingAdmissionPolicyConfiguration\n    staticManifestsDir: /root/validating-policies\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "admission-configuration.yaml"), []byte(cfg), 0o644))
	assert.NoError(t, Verify(dir, "/root"))
}
