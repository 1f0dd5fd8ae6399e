//go:build e2e

package e2e

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const importFixtures = "internal/cli/testdata/bad/import/"

// TestImportedObjectsTheAPIServerRefuses sends each bad import fixture of
// internal/cli's TestCompileRefusesWhatTheClusterRefuses to kube-apiserver
// (Kyverno's kyverno.io and policies.kyverno.io CRDs installed from the
// module cache, no Kyverno webhook) as a dry-run create, and requires that
// the API server refuses it as invalid at the same fields as `admitc
// compile` does, and that admitc exits 2. The refusals that come from an
// engine's webhook, not the API server, are checked to be accepted by the
// API server alone; the fixtures the API server accepts by defaulting are
// accepted by both.
func TestImportedObjectsTheAPIServerRefuses(t *testing.T) {
	installKyvernoCRDs(t, "kyverno", "policies.kyverno.io")
	for _, f := range []string{
		"binding-lowercase-action.yaml", "binding-deny-warn.yaml", "binding-duplicate-action.yaml",
		"binding-paramref-name-and-selector.yaml", "binding-paramref-no-notfound-action.yaml",
		"binding-paramref-unknown-notfound-action.yaml", "binding-bad-match-expressions.yaml",
		"policy-match-condition-variables.yaml",
		"kyverno-validation-failure-action.yaml", "kyverno-failure-action-lowercase.yaml",
		"kyverno-overrides-action.yaml", "kyverno-failure-policy.yaml",
		"kyverno-vpol-validation-actions.yaml", "kyverno-vpol-failure-policy.yaml",
	} {
		t.Run(f, func(t *testing.T) {
			_, stderr, code := admitc(t, "compile", "--backend", "vap", "--policies", importFixtures+f)
			require.Equal(t, 2, code, stderr)
			err := dryRunCreateFile(t, importFixtures+f)
			require.True(t, apierrors.IsInvalid(err), "the API server accepted %s (%v)", f, err)
			assert.Equal(t, admitcPaths(stderr), causeFields(err), "fields: admitc, then kube-apiserver: %v", err)
		})
	}
	// Kyverno's webhook refuses these; the API server alone takes them.
	for _, f := range []string{"kyverno-webhook-timeout.yaml", "kyverno-vpol-no-resource-rules.yaml"} {
		t.Run(f, func(t *testing.T) {
			_, stderr, code := admitc(t, "compile", "--backend", "vap", "--policies", importFixtures+f)
			require.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, "Kyverno's webhook refuses")
			require.NoError(t, dryRunCreateFile(t, importFixtures+f))
		})
	}
	t.Run("kyverno-legacy-enforce.yaml", func(t *testing.T) {
		_, stderr, code := admitc(t, "compile", "--backend", "vap", "--policies", "internal/cli/testdata/good/kyverno-legacy-enforce.yaml")
		require.Equal(t, 0, code, stderr)
		require.NoError(t, dryRunCreateFile(t, "internal/cli/testdata/good/kyverno-legacy-enforce.yaml"))
	})
}

// dryRunCreateFile dry-run creates the one object of a file and returns
// the API server's error.
func dryRunCreateFile(t *testing.T, file string) error {
	t.Helper()
	objs := decode(t, file, mustRead(t, file))
	require.Len(t, objs, 1)
	ri, err := resourceFor(objs[0])
	require.NoError(t, err)
	_, err = ri.Create(context.Background(), objs[0], metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

var diagPath = regexp.MustCompile(`(?m)^[^ ]+:\d+:\d+: ([^ ]+): `)

// admitcPaths are the field paths of admitc's rendered errors, sorted.
func admitcPaths(stderr string) []string {
	var out []string
	for _, m := range diagPath.FindAllStringSubmatch(stderr, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// causeFields are the fields of an Invalid status's causes, sorted.
func causeFields(err error) []string {
	var out []string
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Details != nil {
		for _, c := range s.Status().Details.Causes {
			out = append(out, strings.TrimPrefix(c.Field, "."))
		}
	}
	sort.Strings(out)
	return out
}
