//go:build kyverno && !serveonly

package cli

import (
	"fmt"
	"os"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/compare"
	"github.com/admitc/admitc/internal/generate"
)

// In builds with the kyverno tag, compare adds the Kyverno engine, judging
// admitc's generated ClusterPolicies.
func init() {
	extraEngines = append(extraEngines, func(o *CompareOptions, _ []byte) (compare.Engine, func(), error) {
		if o.KyvernoPolicies != "" {
			data, err := os.ReadFile(o.KyvernoPolicies)
			if err != nil {
				return nil, nil, usageError(fmt.Errorf("read --kyverno-policies: %w", err))
			}
			k, err := compare.NewKyverno(data)
			if err != nil {
				return nil, nil, usageError(err)
			}
			return k, func() {}, nil
		}
		srcs, err := o.Policies.sources()
		if err != nil {
			return nil, nil, usageError(err)
		}
		why := kyvernoCannotJudge(srcs)
		if o.Cluster.NamespaceLabels != "" {
			why = "the kyverno column does not read --namespace-labels yet"
		}
		if why != "" {
			fmt.Fprintf(o.Err, "note: no kyverno column: %s\n", why)
			return nil, nil, nil
		}
		res, diags, err := generate.Run(generate.Request{Sources: srcs, Backends: []string{"kyverno"},
			Options: backends.Options{Namespaces: []string{o.Namespace}}})
		if err != nil {
			return nil, nil, usageError(err)
		}
		if len(diags) > 0 {
			return nil, nil, usageError(fmt.Errorf("cannot compile:\n%s", diags.Error()))
		}
		k, err := compare.NewKyverno(res.Files[0].Data)
		if err != nil {
			return nil, nil, usageError(err)
		}
		return k, func() {}, nil
	})
}

// kyvernoCannotJudge says why the Kyverno engine cannot judge admitc's
// ClusterPolicies for these policies: parameters (the engine needs a
// parameter client offline, and panics without one) or imported policies
// (the kyverno backend refuses them). "" when it can.
func kyvernoCannotJudge(srcs []compiler.Source) string {
	set, diags := compiler.Compile(srcs, compiler.Options{})
	if len(diags) > 0 {
		return ""
	}
	for _, p := range set.Policies {
		switch {
		case p.Imported():
			return fmt.Sprintf("policy %q is an imported admission policy, which the kyverno backend does not translate", p.Name)
		case p.ParamKind != nil:
			return fmt.Sprintf("policy %q has a paramKind, which the Kyverno engine cannot resolve offline", p.Name)
		}
	}
	return ""
}
