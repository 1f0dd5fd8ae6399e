package verify

import (
	"context"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/inputfile"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// kyvernoSuite is a loaded Kyverno test: its policies compiled (keeping
// going past what admitc cannot run), its resources, values and user.
type kyvernoSuite struct {
	dir    string
	set    *ir.PolicySet
	engine *runtime.Engine
	// probe judges only the generated kyverno-match conditions, to tell a
	// rule that does not match from one its celPreconditions skip.
	probe *runtime.Engine
	// preconditionProbe evaluates the match conditions of the rules whose
	// failurePolicy is Ignore with failurePolicy Fail: a precondition
	// Kyverno fails to evaluate is that rule's error, which Ignore hides
	// from the engine's result.
	preconditionProbe *runtime.Engine
	mutating          bool
	resources         []*unstructured.Unstructured
	params            []*unstructured.Unstructured
	values            *valuesSpec
	user              user.Info
	// roles are the user's roles and cluster roles (the userinfo file's).
	roles *kyverno.UserRoles
	// library is what Kyverno's resource and globalContext libraries read
	// (nil: nothing).
	library *runtime.StaticObjects
	// clusterLabels are the labels of the namespaces of kyverno test's
	// fake cluster (a test with clusterResources), by name.
	clusterLabels map[string]map[string]string
	// runs caches each resource's evaluation per operation.
	runs map[string]*evaluationRun
	// crds make the kinds they define resolvable (verify --crd).
	crds []*apiextensionsv1.CustomResourceDefinition
	// ignored says, by duplicateKey, where the resources that kyverno test
	// ignores as duplicates of one it judges were read.
	ignored map[string][]string
}

// loadSuite reads everything a test names, relative to dir.
func loadSuite(dir string, t *kyvernoTest) (*kyvernoSuite, error) {
	return loadSuiteWith(dir, t, nil)
}

// loadSuiteWith is loadSuite with the kinds of crds resolvable.
func loadSuiteWith(dir string, t *kyvernoTest, crds []*apiextensionsv1.CustomResourceDefinition) (*kyvernoSuite, error) {
	s := &kyvernoSuite{dir: dir, values: t.Values, user: &user.DefaultInfo{}, runs: map[string]*evaluationRun{}, crds: crds}
	if len(t.Policies) == 0 {
		return nil, fmt.Errorf("malformed Kyverno test: no policies")
	}
	if t.Variables != "" {
		var v valuesFile
		if err := s.readYAML(t.Variables, &v); err != nil {
			return nil, fmt.Errorf("variables: %w", err)
		}
		s.values = &v.valuesSpec
	}
	s.roles = &kyverno.UserRoles{}
	if t.UserInfo != "" {
		var u userInfoFile
		if err := s.readYAML(t.UserInfo, &u); err != nil {
			return nil, fmt.Errorf("userinfo: %w", err)
		}
		s.user = &user.DefaultInfo{Name: u.UserInfo.Username, UID: u.UserInfo.UID, Groups: u.UserInfo.Groups}
		s.roles = &kyverno.UserRoles{Roles: u.Roles, ClusterRoles: u.ClusterRoles}
	}
	// With clusterResources the CLI calls its fake cluster for an apiCall
	// entry (store.AllowApiCall), which admitc does not: the rule is
	// refused.
	if err := s.compile(t.Policies, len(t.ClusterResources) == 0); err != nil {
		return nil, err
	}
	var err error
	if s.resources, s.ignored, err = s.objects(t.Resources, "resources"); err != nil {
		return nil, err
	}
	if s.params, _, err = s.objects(t.ParamResources, "paramResources"); err != nil {
		return nil, err
	}
	if s.library, err = s.readLibrary(t); err != nil {
		return nil, err
	}
	if len(t.ClusterResources) > 0 {
		if err := s.readClusterNamespaces(); err != nil {
			return nil, err
		}
	}
	if key := s.injectedValue(); key != "" {
		return nil, fmt.Errorf("values set %s: admitc verify does not inject JMESPath values into the object", key)
	}
	return s, nil
}

func (s *kyvernoSuite) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.dir, p)
}

// paths are the files the test names, each a regular file or a directory.
func (s *kyvernoSuite) paths(files []string) ([]string, error) {
	var out []string
	for _, f := range files {
		p := s.path(f)
		if err := inputfile.Check(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (s *kyvernoSuite) readYAML(p string, out any) error {
	data, err := inputfile.ReadFile(s.path(p))
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(data, out)
}

// compile compiles the test's policies, keeping going past the rules
// admitc cannot evaluate (their results are unsupported), and builds the
// engines. Errors are judged as a test runner must: every CEL error fails
// every run, as a ValidatingPolicy that does not compile fails Kyverno's.
func (s *kyvernoSuite) compile(policies []string, offline bool) error {
	paths, err := s.paths(policies)
	if err != nil {
		return err
	}
	sources, err := compiler.ReadSources(paths)
	if err != nil {
		return err
	}
	// The test's user's roles decide a rule's roles and clusterRoles, as
	// kyverno test's RequestInfo does (none without a userinfo file).
	opts := compiler.Options{KeepGoing: true, CRDs: s.crds, KyvernoRoles: s.roles}
	if offline {
		opts.ContextValues = s.apiCallValue
	}
	set, diags := compiler.Compile(sources, opts)
	if len(diags) > 0 {
		return fmt.Errorf("policies do not compile: %s", diags.Error())
	}
	for i := range set.Policies {
		p := &set.Policies[i]
		if p.Type == kyverno.Type && p.From != nil && p.From.Rule == "" {
			// Kyverno reports a ValidatingPolicy's first error in order,
			// whatever its failurePolicy.
			p.FailurePolicy = ir.Fail
		}
		s.mutating = s.mutating || p.Kind == ir.Mutating
	}
	s.set = set
	if s.engine, err = runtime.NewEngine(set); err != nil {
		return err
	}
	if probe := probeSet(set); len(probe.Policies) > 0 {
		if s.probe, err = runtime.NewEngine(probe); err != nil {
			return err
		}
	}
	if probe := preconditionProbeSet(set); len(probe.Policies) > 0 {
		if s.preconditionProbe, err = runtime.NewEngine(probe); err != nil {
			return err
		}
	}
	return nil
}

// preconditionProbeSet holds, for each validating rule with failurePolicy
// Ignore and match conditions, a policy with those conditions, failurePolicy
// Fail, that always passes.
func preconditionProbeSet(set *ir.PolicySet) *ir.PolicySet {
	out := &ir.PolicySet{Version: set.Version}
	for _, p := range set.Policies {
		if p.Kind != ir.Validating || p.FailurePolicy != ir.Ignore || len(p.MatchConditions) == 0 || p.From == nil || p.From.Rule == "" || len(p.Bindings) == 0 {
			continue
		}
		q := p
		q.FailurePolicy = ir.Fail
		q.Variables, q.AuditAnnotations, q.ParamKind = nil, nil, nil
		q.Validations = []ir.Validation{{Expression: "true", Origin: p.Origin}}
		q.Bindings = []ir.Binding{{Name: p.Bindings[0].Name, Origin: p.Origin, Actions: []ir.Action{ir.Deny}}}
		out.Policies = append(out.Policies, q)
	}
	return out
}

// probeSet holds, for each rule with a generated kyverno-match condition,
// a policy that has only that condition and always passes.
func probeSet(set *ir.PolicySet) *ir.PolicySet {
	out := &ir.PolicySet{Version: set.Version}
	for _, p := range set.Policies {
		if len(p.MatchConditions) == 0 || p.MatchConditions[0].Name != kyverno.MatchConditionName || p.From == nil || p.From.Rule == "" {
			continue
		}
		q := p
		q.MatchConditions = p.MatchConditions[:1]
		q.Variables, q.AuditAnnotations, q.ParamKind = nil, nil, nil
		q.Validations = []ir.Validation{{Expression: "true", Origin: p.Origin}}
		q.Bindings = []ir.Binding{{Name: p.Bindings[0].Name, Origin: p.Origin, Actions: p.Bindings[0].Actions}}
		out.Policies = append(out.Policies, q)
	}
	return out
}

// objects reads the objects of files, each namespaced one without a
// namespace put in default, as Kyverno's CLI loads them. Of several with
// the same group, kind, namespace and name only the first is kept, as
// kyverno test's RemoveDuplicates keeps it; ignored says, by duplicateKey,
// where the others were read.
func (s *kyvernoSuite) objects(files []string, what string) (out []*unstructured.Unstructured, ignored map[string][]string, err error) {
	paths, err := s.paths(files)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(paths) == 0 {
		return nil, nil, nil
	}
	ms, err := runtime.ReadManifests(paths)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	ignored = map[string][]string{}
	seen := map[string]bool{}
	for _, m := range ms {
		o := m.Object
		defaultNamespace(o)
		k := duplicateKey(o)
		if seen[k] {
			ignored[k] = append(ignored[k], m.Source)
			continue
		}
		seen[k] = true
		out = append(out, o)
	}
	return out, ignored, nil
}

// duplicateKey is the key of kyverno test's RemoveDuplicates: group, kind,
// namespace and name (not the version).
func duplicateKey(o *unstructured.Unstructured) string {
	gk := o.GroupVersionKind().GroupKind()
	return gk.Group + "," + gk.Kind + "," + o.GetNamespace() + "," + o.GetName()
}

// clusterScoped are the built-in kinds without a namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"StorageClass": true, "CustomResourceDefinition": true, "PriorityClass": true, "IngressClass": true, "RuntimeClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "ValidatingAdmissionPolicy": true,
	"ValidatingAdmissionPolicyBinding": true, "MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"CSIDriver": true, "CSINode": true, "VolumeAttachment": true, "APIService": true, "ClusterPolicy": true,
	"CertificateSigningRequest": true, "ClusterIssuer": true,
}

func defaultNamespace(o *unstructured.Unstructured) {
	if o.GetNamespace() == "" && !clusterScoped[o.GetKind()] {
		o.SetNamespace("default")
	}
}

// resourceKey is Kyverno's generateResourceKey.
func resourceKey(o *unstructured.Unstructured) string {
	return o.GetAPIVersion() + "," + o.GetKind() + "," + o.GetNamespace() + "," + o.GetName()
}

// describeResource is how Kyverno prints a resource: kind/namespace/name.
func describeResource(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// injectedValue names a values key that would rewrite the object in
// Kyverno's JSON context, which admitc does not do.
func (s *kyvernoSuite) injectedValue() string {
	if s.values == nil {
		return ""
	}
	check := func(vals map[string]any) string {
		for k := range vals {
			if strings.HasPrefix(k, "request.object") || strings.HasPrefix(k, "request.oldObject") {
				return k
			}
		}
		return ""
	}
	if k := check(s.values.GlobalValues); k != "" {
		return k
	}
	for _, p := range s.values.Policies {
		for _, r := range p.Resources {
			if k := check(r.Values); k != "" {
				return k
			}
		}
	}
	return ""
}

// operation is the admission operation a resource is judged under for a
// policy: the result's own, else the values file's for that policy and
// resource (rule policies only), else its global one, else CREATE.
func (s *kyvernoSuite) operation(res testResult, policy string, o *unstructured.Unstructured, rulePolicy bool) ir.Operation {
	if res.Operation != "" {
		return ir.Operation(res.Operation)
	}
	op := ir.Create
	if s.values == nil {
		return op
	}
	if v, ok := s.values.GlobalValues["request.operation"].(string); ok && v != "" && v != "CONNECT" {
		op = ir.Operation(v)
	}
	if !rulePolicy {
		return op
	}
	for _, p := range s.values.Policies {
		if p.Name != policy {
			continue
		}
		for _, r := range p.Resources {
			if v, ok := r.Values["request.operation"].(string); ok && r.Name == o.GetName() && v != "" {
				op = ir.Operation(v)
			}
		}
	}
	return op
}

// request is the admission request Kyverno's CLI simulates for o, with
// the parameter objects params (requestParams): UPDATE
// sends the object as both object and oldObject, DELETE only as oldObject;
// a kind the values file names as a subresource is sent as its parent's.
func (s *kyvernoSuite) request(o *unstructured.Unstructured, op ir.Operation, params []*unstructured.Unstructured) *runtime.Request {
	gvk := o.GroupVersionKind()
	req := &runtime.Request{
		UID: "admitc-verify", Kind: gvk, Resource: runtime.ResourceFor(gvk), Operation: op,
		Namespace: o.GetNamespace(), Name: o.GetName(), Object: o, User: s.user, Params: params,
		NamespaceLabels: s.namespaceLabels(o.GetNamespace()), Explain: true, Offline: true,
	}
	if s.library != nil || s.values != nil && len(s.values.Namespaces) > 0 {
		st := &runtime.StaticState{
			NamespaceLabels: map[string]map[string]string{o.GetNamespace(): req.NamespaceLabels},
			ParamObjects:    params, Namespaces: map[string]*corev1.Namespace{},
		}
		if s.library != nil {
			st.Library = s.library
		}
		for i := range s.valueNamespaces() {
			if ns := &s.valueNamespaces()[i]; ns.Name == o.GetNamespace() {
				st.Namespaces[ns.Name] = ns
			}
		}
		req.Cluster = st
	}
	switch op {
	case ir.Update:
		req.OldObject = o.DeepCopy()
	case ir.Delete:
		req.Object, req.OldObject = nil, o
	}
	if s.values != nil {
		for _, sr := range s.values.Subresources {
			sub, parent := sr.Subresource, sr.ParentResource
			if (schema.GroupVersionKind{Group: sub.Group, Version: sub.Version, Kind: sub.Kind}) != gvk {
				continue
			}
			req.Kind = schema.GroupVersionKind{Group: parent.Group, Version: parent.Version, Kind: parent.Kind}
			req.Resource = schema.GroupVersionResource{Group: parent.Group, Version: parent.Version, Resource: parent.Name}
			if _, name, ok := strings.Cut(sub.Name, "/"); ok {
				req.SubResource = name
			}
		}
	}
	return req
}

// namespaceLabels are the labels the values file gives a namespace
// (namespaces take precedence over namespaceSelector entries).
func (s *kyvernoSuite) namespaceLabels(ns string) map[string]string {
	if s.values == nil || ns == "" {
		return s.clusterLabels[ns]
	}
	var out map[string]string
	for _, n := range s.values.NamespaceSelectors {
		if n.Name == ns {
			out = n.Labels
		}
	}
	for _, n := range s.values.Namespaces {
		if n.Name == ns {
			out = n.Labels
		}
	}
	if len(out) == 0 {
		return s.clusterLabels[ns]
	}
	return out
}

// readClusterNamespaces reads, for a test with clusterResources, the labels
// of its resources' namespaces from the fake cluster, as kyverno test does
// when the values file gives none.
func (s *kyvernoSuite) readClusterNamespaces() error {
	s.clusterLabels = map[string]map[string]string{}
	for _, o := range s.resources {
		ns := o.GetNamespace()
		if ns == "" || o.GetKind() == "Namespace" || len(s.namespaceLabels(ns)) > 0 {
			continue
		}
		l, err := s.clusterNamespace(ns)
		if err != nil {
			return err
		}
		s.clusterLabels[ns] = l
	}
	return nil
}

// evaluationRun is what the engine did with one resource under one
// operation: the validations of rule policies on the object as given, of
// ValidatingPolicies on the object after MutatingPolicies (Kyverno's CLI
// order), the mutations, and the probe.
type evaluationRun struct {
	validated, mutatedValidated, mutated, probed, preconditionProbed *runtime.Result
}

func (s *kyvernoSuite) run(ctx context.Context, o *unstructured.Unstructured, op ir.Operation) (*evaluationRun, error) {
	key := string(op) + "|" + resourceKey(o)
	if r, ok := s.runs[key]; ok {
		return r, nil
	}
	params, err := s.requestParams(o)
	if err != nil {
		return nil, err
	}
	req := s.request(o, op, params)
	r := &evaluationRun{}
	if r.validated, err = s.engine.Validate(ctx, req); err != nil {
		return nil, err
	}
	r.mutatedValidated = r.validated
	if s.mutating {
		if r.mutated, err = s.engine.Mutate(ctx, req); err != nil {
			return nil, err
		}
		mreq := *req
		mreq.Object = r.mutated.Object
		if r.mutatedValidated, err = s.engine.Validate(ctx, &mreq); err != nil {
			return nil, err
		}
	}
	if s.probe != nil {
		if r.probed, err = s.probe.Validate(ctx, req); err != nil {
			return nil, err
		}
	}
	if s.preconditionProbe != nil {
		if r.preconditionProbed, err = s.preconditionProbe.Validate(ctx, req); err != nil {
			return nil, err
		}
	}
	s.runs[key] = r
	return r, nil
}

// valueNamespaces are the namespaces the values file gives whole.
func (s *kyvernoSuite) valueNamespaces() []corev1.Namespace {
	if s.values == nil {
		return nil
	}
	return s.values.Namespaces
}
