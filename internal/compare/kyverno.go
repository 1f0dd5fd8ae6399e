//go:build kyverno

package compare

import (
	"context"
	"fmt"
	"strings"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	kyvernov2 "github.com/kyverno/kyverno/api/kyverno/v2"
	"github.com/kyverno/kyverno/pkg/config"
	"github.com/kyverno/kyverno/pkg/engine"
	engineapi "github.com/kyverno/kyverno/pkg/engine/api"
	"github.com/kyverno/kyverno/pkg/engine/factories"
	"github.com/kyverno/kyverno/pkg/engine/jmespath"
	imageverifycache "github.com/kyverno/kyverno/pkg/image/verification/cache"
	utilsengine "github.com/kyverno/kyverno/pkg/utils/engine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/runtime"
)

// Kyverno is the Kyverno engine run offline on generated ClusterPolicies,
// the way `kyverno apply` runs it: every mutation, then validation of the
// patched resource, then the webhook's block decision.
type Kyverno struct {
	eng      engineapi.Engine
	jp       jmespath.Interface
	cfg      config.Configuration
	policies []*kyvernov1.ClusterPolicy
}

// NewKyverno loads ClusterPolicies from a YAML stream.
func NewKyverno(stream []byte) (*Kyverno, error) {
	ms, err := runtime.DecodeManifests("kyverno policies", stream)
	if err != nil {
		return nil, err
	}
	k := &Kyverno{cfg: config.NewDefaultConfiguration(false)}
	for _, m := range ms {
		if m.Object.GetKind() != "ClusterPolicy" {
			return nil, fmt.Errorf("%s: %s is not a Kyverno ClusterPolicy", m.Source, m.Object.GetKind())
		}
		data, err := m.Object.MarshalJSON()
		if err != nil {
			return nil, err
		}
		p := &kyvernov1.ClusterPolicy{}
		if err := yaml.UnmarshalStrict(data, p); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Source, err)
		}
		k.policies = append(k.policies, p)
	}
	k.eng, k.jp = OfflineKyvernoEngine(k.cfg)
	return k, nil
}

// OfflineKyvernoEngine is Kyverno's engine as its CLI runs it offline
// (kyverno test, kyverno apply): no cluster client, no image verification.
func OfflineKyvernoEngine(cfg config.Configuration) (engineapi.Engine, jmespath.Interface) {
	return OfflineKyvernoEngineWith(cfg, factories.DefaultContextLoaderFactory(nil))
}

// OfflineKyvernoEngineWith is OfflineKyvernoEngine with the context loader
// loaders (kyverno test's, say, which puts a values file in the context).
func OfflineKyvernoEngineWith(cfg config.Configuration, loaders engineapi.ContextLoaderFactory) (engineapi.Engine, jmespath.Interface) {
	jp := jmespath.New(cfg)
	isCluster := false
	eng := engine.NewEngine(cfg, jp, nil, factories.DefaultRegistryClientFactory(nil, nil),
		imageverifycache.DisabledImageVerifyCache(), loaders, nil, &isCluster)
	return eng, jp
}

// Name implements Engine.
func (*Kyverno) Name() string { return "kyverno" }

func (k *Kyverno) context(p *kyvernov1.ClusterPolicy, resource unstructured.Unstructured, namespace string) (*engine.PolicyContext, error) {
	pc, err := engine.NewPolicyContext(k.jp, resource, kyvernov1.Create, &kyvernov2.RequestInfo{}, k.cfg)
	if err != nil {
		return nil, err
	}
	gvk := resource.GroupVersionKind()
	return pc.WithPolicy(p).
		WithNamespaceLabels(map[string]string{"kubernetes.io/metadata.name": namespace}).
		WithResourceKind(gvk, "").
		WithRequestResource(metav1.GroupVersionResource(runtime.ResourceFor(gvk))), nil
}

// Admit implements Engine.
func (k *Kyverno) Admit(ctx context.Context, obj *unstructured.Unstructured, namespace string) (Result, error) {
	// The API server sets the request's namespace on the object before
	// admission (and Kyverno matches rules on the object's own namespace),
	// so every engine sees, and returns, the object with it.
	obj.SetNamespace(namespace)
	before := obj.DeepCopy()
	read, err := JSONObject(obj)
	if err != nil {
		return Result{}, err
	}
	resource := *read
	r := Result{Engine: "kyverno", Verdict: Allowed}
	var denials, warnings []string
	for _, p := range k.policies {
		if !p.GetSpec().HasMutate() {
			continue
		}
		pc, err := k.context(p, resource, namespace)
		if err != nil {
			return r, err
		}
		resp := k.eng.Mutate(ctx, pc)
		if resp.IsError() && failurePolicy(p) == kyvernov1.Fail {
			denials = append(denials, ruleMessages(p, resp, engineapi.RuleStatusError)...)
		}
		resource = resp.PatchedResource
	}
	for _, p := range k.policies {
		if !p.GetSpec().HasValidate() {
			continue
		}
		pc, err := k.context(p, resource, namespace)
		if err != nil {
			return r, err
		}
		resp := k.eng.Validate(ctx, pc)
		failed := ruleMessages(p, resp, engineapi.RuleStatusFail, engineapi.RuleStatusError)
		if utilsengine.BlockRequest(resp, failurePolicy(p)) {
			denials = append(denials, failed...)
		} else if p.GetSpec().EmitWarning != nil && *p.GetSpec().EmitWarning {
			warnings = append(warnings, failed...)
		}
	}
	r.Object = &resource
	r.Mutated = !sameObject(before, &resource)
	switch {
	case len(denials) > 0:
		r.Verdict, r.Messages = Denied, denials
	case len(warnings) > 0:
		r.Verdict, r.Messages = Warned, warnings
	}
	return r, nil
}

func failurePolicy(p *kyvernov1.ClusterPolicy) kyvernov1.FailurePolicyType {
	if fp := p.GetSpec().FailurePolicy; fp != nil {
		return *fp
	}
	return kyvernov1.Fail
}

// ruleMessages are "[policy] message" for the rules with one of the statuses.
func ruleMessages(p *kyvernov1.ClusterPolicy, resp engineapi.EngineResponse, statuses ...engineapi.RuleStatus) []string {
	var out []string
	for _, rule := range resp.PolicyResponse.Rules {
		for _, s := range statuses {
			if rule.Status() == s {
				out = append(out, "["+p.Name+"] "+strings.TrimSpace(rule.Message()))
			}
		}
	}
	return out
}
