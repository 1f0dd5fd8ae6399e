package twins

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/compiler/kyverno"
	"github.com/admitc/admitc/internal/generate"
	"github.com/admitc/admitc/ir"
	"github.com/admitc/admitc/runtime"
)

// KubeVersion is the API server version policies are compiled for:
// `admitc compile`'s default --kube-version.
var KubeVersion = version.MajorMinor(1, 36)

// compileBudget is generous: a measure must not refuse a policy because
// the machine is busy (the default 20 s budget is wall time, and the
// largest translations take seconds on a loaded machine).
var compileBudget = compiler.Budget{Time: 30 * time.Minute}

// Compiled is one policy file compiled as `admitc compile --backend vap`
// compiles it (Kyverno's default filters, --kube-version 1.36).
type Compiled struct {
	// Set is what admitc's runtime evaluates: the compiled set with
	// Kyverno's filters applied, as `admitc test` and `admitc serve` run it.
	Set *ir.PolicySet
	// VAP is the vap backend's rendered file.
	VAP []byte
	// Elapsed is the wall time of the compilation, backend included.
	Elapsed time.Duration
}

// Compile compiles the policy file at path.
func Compile(path string) (*Compiled, error) {
	sources, err := compiler.ReadSources([]string{path})
	if err != nil {
		return nil, err
	}
	filters := kyverno.DefaultFilters()
	start := time.Now()
	res, diags, err := generate.Run(generate.Request{
		Sources: sources, Backends: []string{"vap"}, Options: backends.Options{KubeVersion: KubeVersion},
		KyvernoFilters: filters, Budget: compileBudget,
	})
	elapsed := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(diags) > 0 {
		return nil, fmt.Errorf("%s does not compile:\n%s", path, diags.Error())
	}
	set, err := filters.Apply(res.Set)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Compiled{Set: set, Elapsed: elapsed}
	for _, f := range res.Files {
		if f.Name == "vap.yaml" {
			c.VAP = f.Data
		}
	}
	return c, nil
}

// Engine is admitc's runtime on the compiled set, on its default (fast)
// path.
func (c *Compiled) Engine() (*runtime.Engine, error) {
	return runtime.NewEngine(c.Set)
}
