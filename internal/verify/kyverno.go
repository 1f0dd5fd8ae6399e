package verify

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestAPIVersion is the apiVersion of Kyverno test files.
const TestAPIVersion = "cli.kyverno.io/v1alpha1"

// Kyverno runs Kyverno's test files (kind Test, usually
// .kyverno-test/kyverno-test.yaml) with admitc's engine, judging each
// expected result as `kyverno test` does (cmd/cli/kubectl-kyverno/commands/test
// and processor in Kyverno v1.19): one result per expected result, resource
// and rule response, resources keyed by kind, namespace (default for a
// namespaced object without one) and name, a Pod rule's results covering
// its autogen rules, a resource a rule does not match passing as excluded,
// and patched resources compared after dropping nulls and empty maps and
// lists. What admitc cannot run (a field of the test it does not read, a
// rule the compiler refused) is reported as unsupported, never passed.
//
// In a directory, as kyverno test, it runs only the test files named
// FileName; a test file named as a path is always run.
type Kyverno struct {
	// FileName is the name of the test files run in a directory (kyverno
	// test --file-name); "" is DefaultTestFileName.
	FileName string
	// Selector filters the expected results (kyverno test
	// --test-case-selector); the zero Selector selects all.
	Selector Selector
	// CRDs make the kinds they define resolvable (see
	// compiler.Options.CRDs); without them a rule on a custom resource
	// matches its kind in every group, as it always has offline.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// DefaultTestFileName is the name kyverno test looks for in a directory.
const DefaultTestFileName = "kyverno-test.yaml"

var _ Format = Kyverno{}

// Name implements Format.
func (Kyverno) Name() string { return "kyverno" }

// Claims implements Format: a YAML file whose kind is Test and apiVersion
// cli.kyverno.io/v1alpha1, or a test in Kyverno's legacy schema (no kind
// and no apiVersion; policies and results at the top), which Run reports
// as Kyverno's CLI does.
func (Kyverno) Claims(_ string, data []byte) bool {
	var head struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Policies   any    `json:"policies"`
		Results    any    `json:"results"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return bytes.Contains(data, []byte(TestAPIVersion))
	}
	legacy := head.Kind == "" && head.APIVersion == "" && head.Policies != nil && head.Results != nil
	return legacy || head.Kind == "Test" && head.APIVersion == TestAPIVersion
}

// SkipFound implements DirectoryFilter: kyverno test reads only the files
// named --file-name in a directory (test/load.go), so a test file renamed
// to disable it is not run.
func (k Kyverno) SkipFound(file string) string {
	name := k.fileName()
	if filepath.Base(file) == name {
		return ""
	}
	return fmt.Sprintf("a Kyverno test not named %s, which kyverno test does not run (--file-name); name the file as a path to run it", name)
}

func (k Kyverno) fileName() string {
	if k.FileName == "" {
		return DefaultTestFileName
	}
	return k.FileName
}

// deprecatedSchema is Kyverno v1.19's deprecations.CheckTest: a test
// without apiVersion or kind, or with a top-level name, is loaded and then
// refused, failing the whole `kyverno test` run.
func deprecatedSchema(t *kyvernoTest) bool {
	return t.APIVersion == "" || t.Kind == "" || t.Name != ""
}

// DeprecatedSchemaReason is the reason of the error result of a test file
// in Kyverno's legacy schema.
const DeprecatedSchemaReason = "the test file uses Kyverno's deprecated schema (no apiVersion or kind, or a top-level name), which Kyverno v1.19's CLI refuses (\"uses a deprecated schema — please migrate to the latest format\"): add apiVersion: " + TestAPIVersion + ", kind: Test and metadata.name"

// kyvernoTest mirrors Kyverno's v1alpha1.Test (whose package pulls in
// modules admitc does not need); decoded strictly, as Kyverno does.
type kyvernoTest struct {
	APIVersion           string            `json:"apiVersion"`
	Kind                 string            `json:"kind"`
	Metadata             metav1.ObjectMeta `json:"metadata,omitempty"`
	Name                 string            `json:"name,omitempty"`
	Policies             []string          `json:"policies,omitempty"`
	Resources            []string          `json:"resources,omitempty"`
	JSONPayload          string            `json:"jsonPayload,omitempty"`
	JSONPayloads         []string          `json:"jsonPayloads,omitempty"`
	HTTPPayloads         []string          `json:"httpPayloads,omitempty"`
	EnvoyPayloads        []string          `json:"envoyPayloads,omitempty"`
	TargetResources      []string          `json:"targetResources,omitempty"`
	Variables            string            `json:"variables,omitempty"`
	ParamResources       []string          `json:"paramResources,omitempty"`
	UserInfo             string            `json:"userinfo,omitempty"`
	Results              []testResult      `json:"results,omitempty"`
	Values               *valuesSpec       `json:"values,omitempty"`
	Exceptions           []string          `json:"exceptions,omitempty"`
	Context              string            `json:"context,omitempty"`
	ClusterResources     []string          `json:"clusterResources,omitempty"`
	APICallResponses     []any             `json:"apiCallResponses,omitempty"`
	GlobalContextEntries []any             `json:"globalContextEntries,omitempty"`
}

// testResult mirrors v1alpha1.TestResult.
type testResult struct {
	Policy                      string   `json:"policy"`
	Rule                        string   `json:"rule,omitempty"`
	IsValidatingAdmissionPolicy bool     `json:"isValidatingAdmissionPolicy,omitempty"`
	IsMutatingAdmissionPolicy   bool     `json:"isMutatingAdmissionPolicy,omitempty"`
	IsValidatingPolicy          bool     `json:"isValidatingPolicy,omitempty"`
	IsDeletingPolicy            bool     `json:"isDeletingPolicy,omitempty"`
	IsImageValidatingPolicy     bool     `json:"isImageValidatingPolicy,omitempty"`
	IsGeneratingPolicy          bool     `json:"isGeneratingPolicy,omitempty"`
	IsMutatingPolicy            bool     `json:"isMutatingPolicy,omitempty"`
	Result                      string   `json:"result"`
	Kind                        string   `json:"kind"`
	Operation                   string   `json:"operation,omitempty"`
	PatchedResources            string   `json:"patchedResources,omitempty"`
	GeneratedResource           string   `json:"generatedResource,omitempty"`
	CloneSourceResource         string   `json:"cloneSourceResource,omitempty"`
	FailOnMissingResources      bool     `json:"failOnMissingResources,omitempty"`
	Resources                   []string `json:"resources,omitempty"`
	ResourceSpecs               []any    `json:"resourceSpecs,omitempty"`
	GeneratedResources          []string `json:"generatedResources,omitempty"`
}

// valuesSpec mirrors v1alpha1.ValuesSpec.
type valuesSpec struct {
	GlobalValues       map[string]any      `json:"globalValues,omitempty"`
	Policies           []valuesPolicy      `json:"policies,omitempty"`
	NamespaceSelectors []namespaceLabels   `json:"namespaceSelector,omitempty"`
	Namespaces         []corev1.Namespace  `json:"namespaces,omitempty"`
	Subresources       []valuesSubresource `json:"subresources,omitempty"`
}

type valuesFile struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   metav1.ObjectMeta `json:"metadata,omitempty"`
	valuesSpec `json:",inline"`
}

type valuesPolicy struct {
	Name      string `json:"name"`
	Resources []struct {
		Name   string         `json:"name"`
		Values map[string]any `json:"values,omitempty"`
	} `json:"resources,omitempty"`
	Rules []struct {
		Name          string           `json:"name"`
		Values        map[string]any   `json:"values,omitempty"`
		ForeachValues map[string][]any `json:"foreachValues,omitempty"`
	} `json:"rules,omitempty"`
}

type namespaceLabels struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

type valuesSubresource struct {
	Subresource    metav1.APIResource `json:"subresource"`
	ParentResource metav1.APIResource `json:"parentResource"`
}

// userInfoFile mirrors v1alpha1.UserInfo: Kyverno's RequestInfo.
type userInfoFile struct {
	APIVersion   string                    `json:"apiVersion,omitempty"`
	Kind         string                    `json:"kind,omitempty"`
	Metadata     metav1.ObjectMeta         `json:"metadata,omitempty"`
	Roles        []string                  `json:"roles,omitempty"`
	ClusterRoles []string                  `json:"clusterRoles,omitempty"`
	UserInfo     authenticationv1.UserInfo `json:"userInfo"`
}

// NoResultsReason is why a Kyverno test without expected results is a
// result without response: kyverno test passes it whatever the policies
// do, so a strict run fails it.
const NoResultsReason = "the test has no expected results, so it checks nothing (kyverno test passes it whatever the policies do)"

// Run implements Format: one result per expected result the selector
// keeps, resource and rule response (a test without expected results is
// one result without response); no notes.
func (k Kyverno) Run(ctx context.Context, file string, data []byte) ([]Result, []string) {
	var t kyvernoTest
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return []Result{{File: file, Outcome: Error, Reason: "malformed Kyverno test: " + err.Error()}}, nil
	}
	if deprecatedSchema(&t) {
		return []Result{{File: file, Test: t.Name, Outcome: Error, Reason: DeprecatedSchemaReason}}, nil
	}
	if len(t.Results) == 0 {
		return []Result{{File: file, Test: t.Name, Outcome: NoResponse, Reason: NoResultsReason}}, nil
	}
	s, err := loadSuiteWith(filepath.Dir(file), &t, k.CRDs)
	var out []Result
	for _, res := range t.Results {
		if !k.Selector.selects(res) {
			continue
		}
		base := Result{File: file, Test: testName(res), Expected: res.Result}
		switch {
		case err != nil:
			out = append(out, withOutcome(withCase(base, res), Error, err.Error()))
		case unsupportedTest(&t) != "":
			out = append(out, withOutcome(withCase(base, res), Unsupported, unsupportedTest(&t)))
		case unsupportedResult(res) != "":
			out = append(out, withOutcome(withCase(base, res), Unsupported, unsupportedResult(res)))
		default:
			out = append(out, s.judge(ctx, base, res, k.Selector)...)
		}
	}
	return out, nil
}

// testName names one expected result by its policy and rule.
func testName(r testResult) string {
	if r.Rule != "" {
		return r.Policy + "/" + r.Rule
	}
	return r.Policy
}

func withCase(r Result, res testResult) Result {
	r.Case = strings.Join(res.Resources, ", ")
	return r
}

// unsupportedTest names the first field of the test admitc does not read.
func unsupportedTest(t *kyvernoTest) string {
	fields := []struct {
		name string
		set  bool
	}{
		{"exceptions (PolicyExceptions)", len(t.Exceptions) > 0},
		{"targetResources (mutate existing)", len(t.TargetResources) > 0},
		{"apiCallResponses", len(t.APICallResponses) > 0},
		{"jsonPayload", t.JSONPayload != "" || len(t.JSONPayloads) > 0},
		{"httpPayloads", len(t.HTTPPayloads) > 0},
		{"envoyPayloads", len(t.EnvoyPayloads) > 0},
	}
	for _, f := range fields {
		if f.set {
			return fmt.Sprintf("admitc verify does not read the test's %s", f.name)
		}
	}
	return ""
}

// unsupportedResult names the first field of a result admitc does not read.
func unsupportedResult(r testResult) string {
	switch {
	case r.GeneratedResource != "" || len(r.GeneratedResources) > 0 || r.CloneSourceResource != "":
		return "generated resources: admitc does not run generate rules"
	case len(r.ResourceSpecs) > 0:
		return "resourceSpecs: admitc verify matches resources by name or namespace/name"
	case r.IsDeletingPolicy || r.IsImageValidatingPolicy || r.IsGeneratingPolicy:
		return "deleting, image validating and generating policies are not read by admitc"
	case r.IsValidatingAdmissionPolicy || r.IsMutatingAdmissionPolicy:
		return "results of ValidatingAdmissionPolicies and MutatingAdmissionPolicies in a Kyverno test are not judged yet (admitc test runs them)"
	}
	return ""
}
