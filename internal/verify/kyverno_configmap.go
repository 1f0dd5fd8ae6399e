package verify

import (
	"encoding/csv"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/admitc/admitc/ir"
)

// A rule's configMap context entry is, in kyverno test v1.19.1
// (commands/test/test.go, store/contextloader.go), read from:
//
//   - with clusterResources, the CLI's fake cluster (the test's resources,
//     parameter objects and the clusterResources files' resources): a
//     ConfigMap resolver loads the entry as Kyverno's engine does, and a
//     missing ConfigMap is the rule's error;
//   - without, nowhere: the CLI has no ConfigMap resolver and skips the
//     entry, so the rule reads the name only from the values file (global
//     values, the policy's resource values, the rule's values: keys such as
//     cfg.data.registries, split at dots as CSV fields); with none, the
//     query fails and so does the rule.
//
// admitc's translation reads the ConfigMap as params (the binding's
// paramRef, ir.PolicyRef.ParamsContext naming the entry), so verify gives
// the rule's binding the same ConfigMap: the cluster's, or one made of the
// values' data.

// configMapObjects are the ConfigMaps of kyverno test's fake cluster.
func (s *kyvernoSuite) configMapObjects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	if s.library == nil || s.library.FakeContext {
		return nil
	}
	for _, o := range s.library.Objects {
		if o.GetAPIVersion() == "v1" && o.GetKind() == "ConfigMap" && !s.isParam(o) {
			out = append(out, o)
		}
	}
	return out
}

func (s *kyvernoSuite) isParam(o *unstructured.Unstructured) bool {
	for _, p := range s.params {
		if resourceKey(p) == resourceKey(o) {
			return true
		}
	}
	return false
}

// requestParams are the parameter objects of a request for o: the test's,
// the fake cluster's ConfigMaps, and the ConfigMaps the values make for
// the configMap entries of the rules (without clusterResources; the data
// the values give the rules reading one ConfigMap, merged).
func (s *kyvernoSuite) requestParams(o *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := append(append([]*unstructured.Unstructured{}, s.params...), s.configMapObjects()...)
	if s.library != nil && !s.library.FakeContext {
		return out, nil
	}
	made := map[string]*unstructured.Unstructured{}
	for _, p := range s.set.Policies {
		if p.From == nil || p.From.ParamsContext == "" || len(p.Bindings) == 0 || p.Bindings[0].ParamRef == nil {
			continue
		}
		cm, err := s.valuesConfigMap(&p, o.GetName())
		if err != nil {
			return nil, err
		}
		if cm == nil {
			continue
		}
		k := resourceKey(cm)
		prev, ok := made[k]
		if !ok {
			made[k] = cm
			continue
		}
		if err := mergeData(prev, cm); err != nil {
			return nil, fmt.Errorf("policy %s rule %s: %w", p.From.Name, p.From.Rule, err)
		}
	}
	keys := make([]string, 0, len(made))
	for k := range made {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, made[k])
	}
	return out, nil
}

// valuesConfigMap is the ConfigMap p's binding names, with the data the
// values file gives p's configMap entry for the resource named resource;
// nil when the values give the entry nothing (the rule then fails, as the
// CLI's query does).
func (s *kyvernoSuite) valuesConfigMap(p *ir.Policy, resource string) (*unstructured.Unstructured, error) {
	entry := p.From.ParamsContext
	data := map[string]any{}
	add := func(vals map[string]any) error {
		for k, v := range vals {
			fields, err := valuesKey(k)
			if err != nil || len(fields) == 0 || fields[0] != entry {
				continue
			}
			str, ok := v.(string)
			if len(fields) != 3 || fields[1] != "data" || !ok {
				return fmt.Errorf("values set %s for the configMap context entry %q of policy %s rule %s: admitc verify reads only string values of %s.data.KEY (a ConfigMap's data), which its translation reads as params", k, entry, p.From.Name, p.From.Rule, entry)
			}
			data[fields[2]] = str
		}
		return nil
	}
	if err := s.eachValues(p, resource, add); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil
	}
	ref := p.Bindings[0].ParamRef
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace},
		"data":     data,
	}}, nil
}

// eachValues calls add with the values the CLI puts in p's rule's context
// for the resource named resource, in its order: global values, the
// policy's values for the resource, the rule's values.
func (s *kyvernoSuite) eachValues(p *ir.Policy, resource string, add func(map[string]any) error) error {
	if s.values == nil {
		return nil
	}
	all := []map[string]any{s.values.GlobalValues}
	for _, vp := range s.values.Policies {
		if vp.Name != p.From.Name {
			continue
		}
		for _, r := range vp.Resources {
			if r.Name == resource {
				all = append(all, r.Values)
			}
		}
	}
	if rule := s.ruleValues(p.From.Name, p.From.Rule); rule != nil {
		all = append(all, rule)
	}
	for _, vals := range all {
		if err := add(vals); err != nil {
			return err
		}
	}
	return nil
}

// ruleValues are the values of the rule named rule of policy, as the CLI's
// store.GetPolicyRule finds them: the first rule of the values file named
// rule, or whose autogen rules are named rule.
func (s *kyvernoSuite) ruleValues(policy, rule string) map[string]any {
	for _, vp := range s.values.Policies {
		if vp.Name != policy {
			continue
		}
		for _, r := range vp.Rules {
			switch rule {
			case r.Name, "autogen-" + r.Name, "autogen-cronjob-" + r.Name:
				return r.Values
			}
		}
	}
	return nil
}

// valuesKey splits a values key as the CLI's AddVariable does: CSV fields
// separated by dots (a quoted field keeps its dots).
func valuesKey(k string) ([]string, error) {
	r := csv.NewReader(strings.NewReader(k))
	r.Comma = '.'
	return r.Read()
}

// mergeData adds the data of cm to into, the ConfigMap of another rule's
// entry: admitc reads one ConfigMap per name for every rule, so two rules
// may not be given different values for one key.
func mergeData(into, cm *unstructured.Unstructured) error {
	data := into.Object["data"].(map[string]any)
	for k, v := range cm.Object["data"].(map[string]any) {
		if prev, ok := data[k]; ok && prev != v {
			return fmt.Errorf("values give ConfigMap %s/%s key %s the values %q and %q for two rules: admitc reads one ConfigMap for both", cm.GetNamespace(), cm.GetName(), k, prev, v)
		}
		data[k] = v
	}
	return nil
}

// apiCallValue is the value kyverno test's context holds for the apiCall
// entry named entry of rule of policy, given by the values file, and
// whether it holds one (compiler.Options.ContextValues). The CLI puts the
// global values and the policy's values for the resource in the policy
// context (keys split at dots, each key's value merged in, a map into a
// map), then, as the rule's context loads, the rule's values: the entry's
// own loader never runs offline. A value that depends on the resource (the
// policy's resource values) or on the order the CLI ranges over a Go map
// (two keys naming the entry) is not given, and the rule is refused.
func (s *kyvernoSuite) apiCallValue(policy, rule, entry string) (any, bool) {
	if s.values == nil {
		return nil, false
	}
	names := func(vals map[string]any) []string {
		var out []string
		for k := range vals {
			if fields, err := valuesKey(k); err == nil && len(fields) > 0 && fields[0] == entry {
				out = append(out, k)
			}
		}
		return out
	}
	for _, vp := range s.values.Policies {
		for _, r := range vp.Resources {
			if vp.Name == policy && len(names(r.Values)) > 0 {
				return nil, false
			}
		}
	}
	ctx := map[string]any{}
	add := func(vals map[string]any, keys []string) {
		for _, k := range keys {
			fields, _ := valuesKey(k)
			// A copy: merging into it must not write into the test's
			// values (the values file is JSON-decoded, so DeepCopyJSONValue
			// takes every value it holds).
			v := k8sruntime.DeepCopyJSONValue(vals[k])
			for i := len(fields) - 1; i >= 0; i-- {
				v = map[string]any{fields[i]: v}
			}
			mergeValues(v.(map[string]any), ctx)
		}
	}
	global := names(s.values.GlobalValues)
	if len(global) > 1 {
		return nil, false
	}
	add(s.values.GlobalValues, global)
	if rv := s.ruleValues(policy, rule); rv != nil {
		keys := names(rv)
		if len(keys) > 1 {
			return nil, false
		}
		add(rv, keys)
	}
	v, ok := ctx[entry]
	return v, ok
}

// mergeValues is Kyverno's mergeMaps (pkg/engine/context/utils.go): src's
// maps merged into dst's maps, other values replacing dst's.
func mergeValues(src, dst map[string]any) {
	for k, v := range src {
		if next, ok := v.(map[string]any); ok {
			if into, ok := dst[k].(map[string]any); ok {
				mergeValues(next, into)
				continue
			}
		}
		dst[k] = v
	}
}
