package compiler

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/internal/kubeschema"
	"github.com/admitc/admitc/ir"
)

// fileWork is one file read and lowered, waiting for its CEL to be checked.
type fileWork struct {
	r       *reader
	decls   []*declWork
	foreign []*foreignWork
	budget  *fileBudget
	// refused says the file is over its budget: none of its policies is
	// checked or taken.
	refused bool
}

// declWork is one of admitc's own policies, lowered; check is nil when the
// policy had errors or no kind, so its CEL is not checked.
type declWork struct {
	decl  *policyDecl
	check *checkJob
}

// foreignWork is a policy another engine wrote, with one check per policy
// its frontend produced.
type foreignWork struct {
	foreignDoc
	checks []*checkJob
}

// checkJob type-checks one policy's CEL with the API server's compiler; for
// a cel policy without errors, autogen generates its workload policies
// (generated[0] is the policy itself) and each is checked too.
type checkJob struct {
	policy      *ir.Policy
	kubeVersion *version.Version
	autogen     bool
	kinds       []ir.WorkloadKind
	// budget is the file's, which the check spends.
	budget *fileBudget

	errs            []celenv.ExprError
	err             error
	generated       []ir.Policy
	generatedChecks []*checkJob
}

// readFile parses and lowers one file, preparing the checks of its policies.
func readFile(src Source, opts Options, kinds *kubeschema.Resolver) *fileWork {
	start := time.Now()
	r := &reader{file: src.Name, lines: strings.Split(string(src.Data), "\n"), exprNodes: map[string]field{}, kinds: kinds, contextValues: opts.ContextValues, kyvernoRoles: opts.KyvernoRoles}
	fw := &fileWork{r: r, budget: &fileBudget{limit: opts.Budget.withDefaults().Time}}
	defer fw.budget.add(start)
	decls, foreign := r.parse(src.Data)
	for _, d := range decls {
		before := len(r.diags)
		r.lower(d)
		d.obj.done(fmt.Sprintf("a policy of type %q", d.policy.Type))
		w := &declWork{decl: d}
		if len(r.diags) == before && d.info.kind != "" {
			if d.policy.Type == TypeCEL {
				addBuiltinVariables(&d.policy)
			}
			w.check = &checkJob{policy: &d.policy, kubeVersion: opts.KubeVersion, autogen: d.policy.Type == TypeCEL, kinds: d.kinds, budget: fw.budget}
		}
		fw.decls = append(fw.decls, w)
	}
	for _, f := range foreign {
		w := &foreignWork{foreignDoc: f}
		for _, p := range f.policies {
			if p.From == nil || p.From.AutogenOf == "" {
				for _, path := range expressionPaths(p) {
					if n := f.doc.NodeAt(path); n != nil {
						r.exprNodes[path] = field{node: n, origin: f.doc.Origin(n, path)}
					}
				}
			}
			w.checks = append(w.checks, &checkJob{policy: p, kubeVersion: opts.KubeVersion, budget: fw.budget})
		}
		fw.foreign = append(fw.foreign, w)
	}
	fw.spendCEL(opts.Budget.withDefaults().CEL)
	return fw
}

// spendCEL refuses the file, before any of its CEL is checked, when its
// policies emit more than limit characters of CEL.
func (fw *fileWork) spendCEL(limit int) {
	var ps []*ir.Policy
	for _, d := range fw.decls {
		if d.check != nil {
			ps = append(ps, d.check.policy)
		}
	}
	for _, f := range fw.foreign {
		ps = append(ps, f.policies...)
	}
	if o, err := overCEL(ps, limit); err != nil {
		fw.r.errorf(o, "%v", err)
		fw.refused = true
	}
}

// jobs are the file's checks, in file order.
func (fw *fileWork) jobs() []*checkJob {
	var out []*checkJob
	if fw.refused {
		return nil
	}
	for _, d := range fw.decls {
		if d.check != nil {
			out = append(out, d.check)
		}
	}
	for _, f := range fw.foreign {
		out = append(out, f.checks...)
	}
	return out
}

// runChecks runs the checks on every core. Checks share nothing but the
// API server's CEL environments and compiled programs, which are safe for
// concurrent use.
func runChecks(jobs []*checkJob) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
				jobs[i].run()
			}
		}()
	}
	wg.Wait()
}

func (c *checkJob) run() {
	start := time.Now()
	c.errs, c.err = celenv.CheckWithin(c.policy, c.kubeVersion, c.budget.stopper(start))
	c.budget.add(start)
	if !c.autogen || c.err != nil || len(c.errs) > 0 {
		return
	}
	c.generated = autogenCEL(*c.policy, c.kinds)
	c.generatedChecks = make([]*checkJob, len(c.generated))
	for i := 1; i < len(c.generated); i++ {
		g := &checkJob{policy: &c.generated[i], kubeVersion: c.kubeVersion, budget: c.budget}
		g.run()
		c.generatedChecks[i] = g
	}
}
