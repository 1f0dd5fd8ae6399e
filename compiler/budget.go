package compiler

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/admitc/admitc/ir"
)

// Budget bounds what compiling one file may cost, so that no policy file
// can hold a compile (or a serve reload) for long or exhaust its memory.
// A file past either bound is refused, naming the policy or expression
// where the budget ran out; the others compile as before.
//
// The budget is the CEL a file emits (and, before it, the limits on an
// expression's size and on nesting): deterministic, so the same suite
// compiles or is refused whatever the machine is doing. Time is only a
// last guard against what those limits miss, far above what any
// published policy takes, and reported as such.
type Budget struct {
	// Time is the wall-clock guard on lowering and type-checking one
	// file's policies (0: DefaultBudgetTime). It is checked before each
	// expression, so one expression may run past it.
	Time time.Duration
	// CEL is the most characters of CEL one file's policies may emit
	// (0: DefaultBudgetCEL). Type-checking is what a compile spends its
	// memory on, and it grows with the CEL checked: this bounds it before
	// any is checked.
	CEL int
}

const (
	// DefaultBudgetTime is the default Budget.Time, a guard rather than a
	// budget: the largest published policy files compile in well under a
	// second, and a busy machine must not refuse what an idle one takes.
	DefaultBudgetTime = 2 * time.Minute
	// DefaultBudgetCEL is the default Budget.CEL. An API server stores an
	// object of at most 1.5 MB, so one policy's CEL cannot be much more;
	// the largest published policy files emit a few hundred thousand.
	DefaultBudgetCEL = 2_000_000
)

// withDefaults fills the zero fields with their defaults.
func (b Budget) withDefaults() Budget {
	if b.Time <= 0 {
		b.Time = DefaultBudgetTime
	}
	if b.CEL <= 0 {
		b.CEL = DefaultBudgetCEL
	}
	return b
}

// fileBudget is what one file has spent of its time budget: its lowering
// and its checks, which run on several cores, each add their time.
type fileBudget struct {
	limit time.Duration
	spent atomic.Int64
}

// add counts time spent since start.
func (b *fileBudget) add(start time.Time) {
	b.spent.Add(int64(time.Since(start)))
}

// stopper is the stop function of a check started at start: an error once
// the file's time spent, with this check's, passes the limit.
func (b *fileBudget) stopper(start time.Time) func(ir.Origin) error {
	return func(o ir.Origin) error {
		if spent := time.Duration(b.spent.Load()) + time.Since(start); spent > b.limit {
			return &BudgetError{Path: o.Path, Detail: fmt.Sprintf("lowering and type-checking the file took %v of wall-clock time, past the %v guard (a guard, not the budget: the CEL budget bounds a file deterministically; this means a construct those limits miss, or a machine far too busy)", spent.Round(time.Millisecond), b.limit)}
		}
		return nil
	}
}

// BudgetError is a file refused for costing more than its Budget to
// compile.
type BudgetError struct {
	// Path is the field path of the policy or expression where the budget
	// ran out.
	Path string
	// Detail says what was spent and what the budget is.
	Detail string
}

// budgetExceeded starts a BudgetError's message.
const budgetExceeded = "compile budget exceeded"

func (e *BudgetError) Error() string {
	return fmt.Sprintf(budgetExceeded+" at %s: %s; simplify or split the policy (nesting and repeated entries cost the most)", e.Path, e.Detail)
}

// celSize is how many characters of CEL p holds.
func celSize(p *ir.Policy) int {
	n := 0
	for _, v := range p.Variables {
		n += len(v.Expression)
	}
	for _, m := range p.MatchConditions {
		n += len(m.Expression)
	}
	for _, v := range p.Validations {
		n += len(v.Expression) + len(v.MessageExpression)
	}
	for _, a := range p.AuditAnnotations {
		n += len(a.ValueExpression)
	}
	for _, m := range p.Mutations {
		n += len(m.Expression)
	}
	return n
}

// overCEL is the refusal of a file whose policies hold more CEL than the
// budget, at its largest policy, or nil.
func overCEL(ps []*ir.Policy, limit int) (ir.Origin, error) {
	total, most := 0, -1
	for i, p := range ps {
		n := celSize(p)
		total += n
		if most < 0 || n > celSize(ps[most]) {
			most = i
		}
	}
	if total <= limit {
		return ir.Origin{}, nil
	}
	o := ps[most].Origin
	return o, &BudgetError{Path: o.Path, Detail: fmt.Sprintf("the file's policies emit %d characters of CEL (%d by this one), the budget is %d per file", total, celSize(ps[most]), limit)}
}

// limitMessages are the API server's CEL parser's refusals of an
// expression too long or too deeply nested: limits a policy ran into, not
// errors of admitc's translation.
var limitMessages = []string{"expression code point size exceeds limit", "max recursion depth exceeded", "expression recursion limit exceeded"}

// isLimit says whether a type-checking error is a limit the policy ran
// into (see limitMessages); a budget error is not one.
func isLimit(msg string) bool {
	for _, m := range limitMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}
