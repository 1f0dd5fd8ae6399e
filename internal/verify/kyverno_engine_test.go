//go:build kyverno

package verify

import (
	"context"
	"fmt"
	"sort"

	"github.com/go-logr/logr"
	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	kyvernov2 "github.com/kyverno/kyverno/api/kyverno/v2"
	"github.com/kyverno/kyverno/pkg/config"
	"github.com/kyverno/kyverno/pkg/engine"
	engineapi "github.com/kyverno/kyverno/pkg/engine/api"
	enginecontext "github.com/kyverno/kyverno/pkg/engine/context"
	"github.com/kyverno/kyverno/pkg/engine/factories"
	"github.com/kyverno/kyverno/pkg/engine/jmespath"
	utilsengine "github.com/kyverno/kyverno/pkg/utils/engine"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/internal/compare"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// kyvernoEngine is Kyverno's engine as its CLI runs it offline
// (compare.OfflineKyvernoEngine).
type kyvernoEngine struct {
	eng engineapi.Engine
	jp  jmespath.Interface
	cfg config.Configuration
}

func newKyvernoEngine() *kyvernoEngine {
	k := &kyvernoEngine{cfg: config.NewDefaultConfiguration(false)}
	k.eng, k.jp = compare.OfflineKyvernoEngine(k.cfg)
	return k
}

// newKyvernoEngineWithValues is newKyvernoEngine whose context loader puts
// in a rule's context, before its entries load, what the test's values
// file gives the rule's apiCall entries (its global values, then the
// rule's own), with Kyverno's AddVariable, as kyverno test's
// makePolicyContext and store.ContextLoaderFactory do; offline, the
// entries themselves never load.
func newKyvernoEngineWithValues(s *kyvernoSuite) *kyvernoEngine {
	k := &kyvernoEngine{cfg: config.NewDefaultConfiguration(false)}
	loaders := func(policy kyvernov1.PolicyInterface, rule kyvernov1.Rule) engineapi.ContextLoader {
		init := func(jc enginecontext.Interface) error {
			apiCalls := map[string]bool{}
			for _, e := range rule.Context {
				apiCalls[e.Name] = e.APICall != nil
			}
			add := func(vals map[string]any) error {
				for key, v := range vals {
					if f, err := valuesKey(key); err == nil && len(f) > 0 && apiCalls[f[0]] {
						if err := jc.AddVariable(key, v); err != nil {
							return err
						}
					}
				}
				return nil
			}
			if err := add(s.values.GlobalValues); err != nil {
				return err
			}
			return add(s.ruleValues(policy.GetName(), rule.Name))
		}
		return factories.DefaultContextLoaderFactory(nil, factories.WithInitializer(init))(policy, rule)
	}
	k.eng, k.jp = compare.OfflineKyvernoEngineWith(k.cfg, loaders)
	return k
}

// readClusterPolicies reads the ClusterPolicies of the test's policy files
// (other kinds are not this comparison's).
func (s *kyvernoSuite) readClusterPolicies(files []string) ([]*kyvernov1.ClusterPolicy, error) {
	var paths []string
	for _, f := range files {
		paths = append(paths, s.path(f))
	}
	ms, err := runtime.ReadManifests(paths)
	if err != nil {
		return nil, err
	}
	var out []*kyvernov1.ClusterPolicy
	for _, m := range ms {
		if m.Object.GetKind() != "ClusterPolicy" || m.Object.GetAPIVersion() != "kyverno.io/v1" {
			continue
		}
		data, err := m.Object.MarshalJSON()
		if err != nil {
			return nil, err
		}
		p := &kyvernov1.ClusterPolicy{}
		if err := yaml.UnmarshalStrict(data, p); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Source, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// kyvernoAnswer is Kyverno's engine's answer for one policy: each rule's
// status (pass, fail, skip, error, warn) and message, and the response
// itself for the webhook's block decision.
type kyvernoAnswer struct {
	rules    map[string]string
	messages map[string]string
	response engineapi.EngineResponse
	panicked string
}

// validate runs the engine's validation of p on obj as the CLI's
// makePolicyContext builds it: the operation (UPDATE with the object as
// its own old object, DELETE with it as the old object only), the
// namespace labels of the values file and the test's user.
func (k *kyvernoEngine) validate(ctx context.Context, s *kyvernoSuite, p *kyvernov1.ClusterPolicy, obj *unstructured.Unstructured, op ir.Operation) (ans kyvernoAnswer, err error) {
	defer func() {
		if r := recover(); r != nil {
			ans.panicked = fmt.Sprint(r)
		}
	}()
	obj, err = compare.JSONObject(obj)
	if err != nil {
		return ans, err
	}
	operation, resource := kyvernov1.Create, *obj.DeepCopy()
	switch op {
	case ir.Update:
		operation = kyvernov1.Update
	case ir.Delete:
		operation, resource = kyvernov1.Delete, unstructured.Unstructured{}
	}
	pc, err := engine.NewPolicyContext(k.jp, resource, operation, s.kyvernoUser(), k.cfg)
	if err != nil {
		return ans, err
	}
	if op == ir.Update || op == ir.Delete {
		pc = pc.WithOldResource(*obj.DeepCopy())
		if err := pc.JSONContext().AddOldResource(obj.DeepCopy().Object); err != nil {
			return ans, err
		}
	}
	if name := obj.GetName(); name != "" {
		// An admission request names its object (Kyverno's webhook adds the
		// whole request to the context; request.name is omitted when empty).
		if err := pc.JSONContext().AddVariable("request.name", name); err != nil {
			return ans, err
		}
	}
	pc = pc.WithPolicy(p).WithNamespaceLabels(s.namespaceLabels(obj.GetNamespace())).WithResourceKind(obj.GroupVersionKind(), "")
	resp := k.eng.Validate(ctx, pc)
	ans = kyvernoAnswer{rules: map[string]string{}, messages: map[string]string{}, response: resp}
	for _, r := range resp.PolicyResponse.Rules {
		ans.rules[r.Name()], ans.messages[r.Name()] = string(r.Status()), r.Message()
	}
	return ans, nil
}

// kyvernoUser is the test's user as Kyverno's RequestInfo.
func (s *kyvernoSuite) kyvernoUser() *kyvernov2.RequestInfo {
	info := &kyvernov2.RequestInfo{}
	if s.user != nil {
		info.AdmissionUserInfo = authenticationv1.UserInfo{Username: s.user.GetName(), UID: s.user.GetUID(), Groups: s.user.GetGroups()}
	}
	if s.roles != nil {
		info.Roles, info.ClusterRoles = s.roles.Roles, s.roles.ClusterRoles
	}
	return info
}

// blocks is the webhook's decision (BlockRequest) on the policy's
// response restricted to the rules compared.
func (a kyvernoAnswer) blocks(p *kyvernov1.ClusterPolicy, compared map[string]bool) bool {
	resp := a.response
	var rules []engineapi.RuleResponse
	for _, r := range resp.PolicyResponse.Rules {
		if compared[r.Name()] {
			rules = append(rules, r)
		}
	}
	resp.PolicyResponse.Rules = rules
	fp := kyvernov1.Fail
	if p.GetSpec().FailurePolicy != nil {
		fp = *p.GetSpec().FailurePolicy
	}
	return utilsengine.BlockRequest(resp, fp)
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
