//go:build kyverno

package cli

import (
	"fmt"
	"os"

	"github.com/admitc/admitc/backends"
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
