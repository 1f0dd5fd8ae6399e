package migrate_test

import (
	"bytes"
	"context"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/migrate"
)

// The report names what each written file holds: for each rule, its
// successors under the successor file and its admission policies (named
// POLICY.RULE, unlike the successors) under vap.yaml or map.yaml, so a
// reader finds every name it reads in the file it names. A policy with
// validate and mutate rules writes each kind to its own file; a rule
// whose successor is refused still names the admission policy written
// for it.
func TestReportNamesWhatEachFileHolds(t *testing.T) {
	cases := map[string]struct {
		dir   string
		lines []string
	}{
		"long rule names, autogen written out": {"../../examples/kyverno-pattern/require-non-root-groups-foreach", []string{
			"  OK        check-runasgroup -> validatingpolicy.yaml: require-non-root-groups-foreach-check-runasgroup, autogen-require-non-root-groups-foreach-check-runasgroup, autogen-cronjob-require-non-root-groups-foreach-check-80d3efe0; " +
				"vap.yaml: require-non-root-groups-foreach.check-runasgroup, require-non-root-groups-foreach.autogen-check-runasgroup, require-non-root-groups-foreach.autogen-cronjob-check-runasgroup\n",
			"  OK        check-fsgroup-and-supplementalgroups -> validatingpolicy.yaml: require-non-root-groups-foreach-check-fsgroup-and-supp-8e34eb98, autogen-require-non-root-groups-foreach-check-fsgroup-9fa0beef, autogen-cronjob-require-non-root-groups-foreach-check-b0832457; " +
				"vap.yaml: require-non-root-groups-foreach.check-fsgroup-and-supplementalgroups, require-non-root-groups-foreach.autogen-check-fsgroup-and-supplementalgroups, require-non-root-groups-foreach.autogen-cronjob-check-fsgroup-and-supplementalgroups\n",
		}},
		"validate and mutate rules": {"../cli/testdata/migrate/validate-and-mutate", []string{
			"  OK        default-team-label -> mutatingpolicy.yaml: team-label-default-team-label; map.yaml: team-label.default-team-label\n",
			"  OK        team-label-not-empty -> validatingpolicy.yaml: team-label-team-label-not-empty; vap.yaml: team-label.team-label-not-empty\n",
		}},
		"successor refused, admission policy written": {"../../examples/kyverno-pattern/restrict-registries-configmap/policy.yaml", []string{
			"            vap.yaml: restrict-registries-configmap.validate-registries, restrict-registries-configmap.autogen-validate-registries, restrict-registries-configmap.autogen-cronjob-validate-registries\n",
		}},
		"a ValidatingPolicy keeps its autogen, vap.yaml writes it out": {"../../examples/kyverno/vpol-disallow-latest-tag/policy.yaml", []string{
			"  OK        (policy) -> validatingpolicy.yaml: vpol-disallow-latest-tag; vap.yaml: vpol-disallow-latest-tag, autogen-cronjob-vpol-disallow-latest-tag, autogen-vpol-disallow-latest-tag\n",
		}},
		"an admission policy keeps its name in both files": {"../cli/testdata/migrate/admission-policy", []string{
			"  OK        (policy) -> validatingpolicy.yaml, vap.yaml: replica-cap\n",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := migrate.Run(context.Background(), []string{tc.dir}, migrate.Options{})
			require.NoError(t, err)
			assert.Equal(t, policyNamesInFiles(t, res.Files), policyNamesInReport(res.Report))
			var text bytes.Buffer
			require.NoError(t, res.Report.WriteText(&text))
			for _, line := range tc.lines {
				assert.Contains(t, text.String(), line)
			}
		})
	}
}

// policyNamesInFiles are the names of the policies (not bindings) each
// written policy file holds, by file name and sorted, checked to be of the
// file's kind.
func policyNamesInFiles(t *testing.T, files []migrate.File) map[string][]string {
	kinds := map[string]string{"validatingpolicy.yaml": "ValidatingPolicy", "mutatingpolicy.yaml": "MutatingPolicy",
		"vap.yaml": "ValidatingAdmissionPolicy", "map.yaml": "MutatingAdmissionPolicy"}
	out := map[string][]string{}
	for _, f := range files {
		base := path.Base(f.Path)
		if kinds[base] == "" {
			continue
		}
		for _, doc := range strings.Split(string(f.Data), "\n---\n") {
			var u unstructured.Unstructured
			require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
			if strings.HasSuffix(u.GetKind(), "Binding") {
				continue
			}
			assert.Equal(t, kinds[base], u.GetKind(), "%s holds a %s", f.Path, u.GetKind())
			out[base] = append(out[base], u.GetName())
		}
	}
	return sorted(out)
}

// policyNamesInReport are the names the report gives each file, sorted.
func policyNamesInReport(r migrate.Report) map[string][]string {
	out := map[string][]string{}
	for _, p := range r.Policies {
		for _, rule := range p.Rules {
			if len(rule.Successors) > 0 {
				out[rule.SuccessorFile] = append(out[rule.SuccessorFile], rule.Successors...)
			}
			if len(rule.AdmissionPolicies) > 0 {
				out[rule.AdmissionPolicyFile] = append(out[rule.AdmissionPolicyFile], rule.AdmissionPolicies...)
			}
		}
	}
	return sorted(out)
}

func sorted(names map[string][]string) map[string][]string {
	for _, list := range names {
		sort.Strings(list)
	}
	return names
}
