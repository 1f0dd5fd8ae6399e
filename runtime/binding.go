package runtime

import (
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"

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

// matcher returns the upstream matcher, its namespace lister reading the
// request's cluster state.
func (ev *evaluation) matcher() *matching.Matcher {
	if ev.match == nil {
		ev.match = matching.NewMatcher(namespaceLister{ctx: ev.ctx, state: ev.state}, nil)
	}
	return ev.match
}

// matches reports whether the request matches m; err is a configuration
// error (a selector that does not parse, a namespace that cannot be read),
// decided by the failure policy.
func (ev *evaluation) matches(m *ir.MatchResources) (bool, error) {
	ok, _, _, err := ev.matcher().Matches(ev.attr.Attributes, objectInterfaces, criteria{apiconv.MatchResources(m)})
	return ok, err
}

// paramKindServed checks, as the API server does before any binding, that
// the kind of the parameter objects p reads from the cluster is served: a
// kind that is not is a configuration error of the policy.
func (ev *evaluation) paramKindServed(p *ir.Policy) error {
	k := p.ClusterParamKind()
	if k == nil {
		return nil
	}
	_, err := ev.state.Params(paramGVK(k))
	return err
}

// bindingParams finds the parameter objects of binding b of p, as the API
// server's CollectParams does: [nil] when the policy takes none, an error
// for parameterNotFoundAction Deny with none found. They are the binding's
// own Params when it has some, else the cluster's.
func (ev *evaluation) bindingParams(p *ir.Policy, b *ir.Binding) ([]k8sruntime.Object, error) {
	if p.ParamKind == nil || b.ParamRef == nil {
		return []k8sruntime.Object{nil}, nil
	}
	gvk := paramGVK(p.ParamKind)
	var store ParamStore = newParamList(gvk, compiledParams(b.Params))
	if len(b.Params) == 0 {
		s, err := ev.state.Params(gvk)
		if err != nil {
			return nil, err
		}
		store = s
	}
	return collectParams(store, b.ParamRef, ev.req.Namespace)
}

// errParamsSkipped says a policy in admitc's own format found no parameter
// object under parameterNotFoundAction Allow: it does not run.
var errParamsSkipped = errors.New("no parameter object; parameterNotFoundAction Allow")

// policyParams finds the parameter object of a policy in admitc's own
// format through its one implicit binding (the binding the vap backend
// emits), with the API server's wording of what goes wrong: nil when it
// takes none, errParamsSkipped when none is found under Allow.
func (ev *evaluation) policyParams(p *ir.Policy) (k8sruntime.Object, error) {
	if p.ParamKind == nil || p.ParamRef == nil {
		return nil, nil
	}
	store, err := ev.state.Params(paramGVK(p.ParamKind))
	if err != nil {
		return nil, fmt.Errorf("failed to configure policy: %w", err)
	}
	objs, err := collectParams(store, p.ParamRef, ev.req.Namespace)
	switch {
	case err != nil:
		return nil, fmt.Errorf("failed to configure binding: %w", err)
	case len(objs) == 0:
		return nil, errParamsSkipped
	}
	return objs[0], nil
}

// collectParams is the API server's CollectParams on one kind's store: the
// objects ref names or selects, in ref's namespace or the request's for a
// namespaced kind.
func collectParams(store ParamStore, ref *ir.ParamRef, requestNamespace string) ([]k8sruntime.Object, error) {
	ns := ""
	if store.Namespaced() {
		ns = requestNamespace
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	var out []k8sruntime.Object
	if ref.Name != "" {
		obj, err := store.Get(ns, ref.Name)
		switch {
		case err == nil:
			out = []k8sruntime.Object{obj}
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(apiconv.Selector(ref.Selector))
		if err != nil {
			return nil, err
		}
		if out, err = store.List(ns, sel); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 && ref.ParameterNotFoundAction != ir.ParamAllow {
		return nil, errParamNotFound
	}
	return out, nil
}

func paramGVK(k *ir.ParamKind) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(k.APIVersion, k.Kind)
}

// compiledParams wraps a binding's compiled-in parameter objects. The
// evaluator only reads them, so they are shared, not copied.
func compiledParams(objs []map[string]any) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = &unstructured.Unstructured{Object: o}
	}
	return out
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
	msg := fmt.Sprintf("failed to configure %s: %v", what, err)
	var me *mutationError
	if errors.As(err, &me) {
		msg = me.Error()
	}
	return Violation{Policy: p.Name, Binding: binding, Actions: []ir.Action{ir.Deny}, Message: msg, Error: true}, true
}

// mutationError is a mutation that failed to evaluate. The API server
// reports it as the error itself ("policy 'P' with binding 'B' denied
// request: ERR"), not as a configuration error.
type mutationError struct{ err error }

func (e *mutationError) Error() string { return e.err.Error() }
func (e *mutationError) Unwrap() error { return e.err }
