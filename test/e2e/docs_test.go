//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/admitc/admitc/internal/doctest"
)

// writeKubeconfig writes an admin kubeconfig for the test cluster.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: kc.server, CertificateAuthority: kc.caFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin", Namespace: "shop"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(kc.dir, "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// TestDocumentedClusterCommandsRun runs the `sh e2e` blocks of README.md and
// docs/*.md against the test cluster, with kubectl v1.37.2 and admitc on PATH.
func TestDocumentedClusterCommandsRun(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	root, err := filepath.Abs(repo)
	require.NoError(t, err)
	bin := filepath.Dir(buildAdmitc(t))
	require.NoError(t, os.Symlink(filepath.Join(kc.bin, "kubectl"), filepath.Join(bin, "kubectl")))
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + writeKubeconfig(t), "WORK=" + t.TempDir()}
	files, err := filepath.Glob(filepath.Join(root, "docs/*.md"))
	require.NoError(t, err)
	commands := 0
	for _, f := range append([]string{filepath.Join(root, "README.md")}, files...) {
		blocks, err := doctest.Parse(f, "e2e")
		require.NoError(t, err)
		for _, b := range blocks {
			commands += len(b.Commands)
			doctest.Run(t, b, root, env)
		}
	}
	require.Greater(t, commands, 5, "the runbook lost its cluster examples")
}

// TestCompareWithTheLiveAPIServer runs `admitc compare --kubeconfig` against
// the test cluster: the API server is a fourth (here: third) engine column.
func TestCompareWithTheLiveAPIServer(t *testing.T) {
	deleteManaged(t)
	defer deleteManaged(t)
	kubeconfig := writeKubeconfig(t)
	out, stderr, code := admitc(t, "compare", "--kubeconfig", kubeconfig, "--namespace", "shop", "-o", "markdown", "examples/manifests/")
	t.Log(out)
	require.Equal(t, 0, code, stderr+out)
	require.Contains(t, out, "| `Pod/privileged` | apiserver | denied | false | pods \"privileged\" is forbidden: ValidatingAdmissionPolicy 'disallow-privileged'")
	require.Contains(t, out, "| `Pod/no-limit` | apiserver | warned | true |")
	require.Contains(t, out, "11 manifest(s): every engine agrees")
}
