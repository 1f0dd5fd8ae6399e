package runtime

import (
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/admitc/admitc/internal/apiconv"
	"github.com/admitc/admitc/ir"
)

// An imported policy is matched as the API server's policy plugins match
// it: its matchConstraints, then each binding's matchResources, with the
// upstream matcher (namespace and object selectors, resource rules with
// wildcards and subresources, resourceNames, excludeResourceRules, scope).

// criteria adapts IR match resources to the upstream matcher.
type criteria struct {
	mr admissionregistrationv1.MatchResources
}

// GetParsedNamespaceSelector implements matching.MatchCriteria.
func (c criteria) GetParsedNamespaceSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.mr.NamespaceSelector)
}

// GetParsedObjectSelector implements matching.MatchCriteria.
func (c criteria) GetParsedObjectSelector() (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(c.mr.ObjectSelector)
}

// GetMatchResources implements matching.MatchCriteria.
func (c criteria) GetMatchResources() admissionregistrationv1.MatchResources { return c.mr }

var _ matching.MatchCriteria = criteria{}

// matcher returns the upstream matcher, its namespace lister holding the
// request's namespace.
func (ev *evaluation) matcher() *matching.Matcher {
	if ev.match == nil {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		if ev.nsObj != nil {
			_ = idx.Add(ev.nsObj)
		}
		ev.match = matching.NewMatcher(corev1listers.NewNamespaceLister(idx), nil)
	}
	return ev.match
}

// matches reports whether the request matches m; err is a configuration
// error (a selector that does not parse), decided by the failure policy.
func (ev *evaluation) matches(m *ir.MatchResources) (bool, error) {
	ok, _, _, err := ev.matcher().Matches(ev.attr.Attributes, objectInterfaces, criteria{apiconv.MatchResources(m)})
	return ok, err
}

// bindingParams finds the parameter objects of binding b of p, as the API
// server's CollectParams does: [nil] when the policy takes none, an error
// for parameterNotFoundAction Deny with none found. The candidates are the
// binding's own Params when it has some, else the request's.
func (ev *evaluation) bindingParams(p *ir.Policy, b *ir.Binding) ([]k8sruntime.Object, error) {
	ref := b.ParamRef
	if p.ParamKind == nil || ref == nil {
		return []k8sruntime.Object{nil}, nil
	}
	candidates := ev.req.Params
	if len(b.Params) > 0 {
		candidates = staticParams(b.Params)
	}
	namespaced := paramKindNamespaced(p.ParamKind, candidates)
	ns := ""
	if namespaced {
		ns = ev.req.Namespace
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	var sel labels.Selector
	if ref.Name == "" {
		s, err := metav1.LabelSelectorAsSelector(apiconv.Selector(ref.Selector))
		if err != nil {
			return nil, err
		}
		sel = s
	}
	var out []k8sruntime.Object
	for _, obj := range candidates {
		if obj.GetAPIVersion() != p.ParamKind.APIVersion || obj.GetKind() != p.ParamKind.Kind || obj.GetNamespace() != ns {
			continue
		}
		if (ref.Name != "" && obj.GetName() == ref.Name) || (sel != nil && sel.Matches(labels.Set(obj.GetLabels()))) {
			out = append(out, obj)
		}
	}
	if len(out) == 0 && ref.ParameterNotFoundAction != ir.ParamAllow {
		return nil, errParamNotFound
	}
	return out, nil
}

// staticParams wraps a binding's compiled-in parameter objects. The
// evaluator only reads them, so they are shared, not copied.
func staticParams(objs []map[string]any) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = &unstructured.Unstructured{Object: o}
	}
	return out
}

// paramKindNamespaced says whether a param kind is namespaced: the core
// kinds admitc knows, else whether its parameter objects carry a namespace.
func paramKindNamespaced(k *ir.ParamKind, params []*unstructured.Unstructured) bool {
	switch k.Kind {
	case "ConfigMap", "Secret":
		return true
	case "Namespace":
		return false
	}
	for _, obj := range params {
		if obj.GetAPIVersion() == k.APIVersion && obj.GetKind() == k.Kind && obj.GetNamespace() != "" {
			return true
		}
	}
	return false
}

// namespaceObject builds the request's Namespace for selectors and
// namespaceObject: its name label and the labels the request names.
func namespaceObject(req *Request) *corev1.Namespace {
	if req.Namespace == "" {
		return nil
	}
	labels := map[string]string{corev1.LabelMetadataName: req.Namespace}
	for k, v := range req.NamespaceLabels {
		labels[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: req.Namespace, Labels: labels}}
}

// configError is the violation of a policy or binding the API server could
// not configure (a selector that does not parse, params not found): it
// denies under failurePolicy Fail, whatever the validation actions.
func configError(p *ir.Policy, binding string, err error) (Violation, bool) {
	if p.FailurePolicy == ir.Ignore {
		return Violation{}, false
	}
	what := "policy"
	if binding != "" {
		what = "binding"
	}
	return Violation{Policy: p.Name, Binding: binding, Actions: []ir.Action{ir.Deny}, Message: fmt.Sprintf("failed to configure %s: %v", what, err), Error: true}, true
}
