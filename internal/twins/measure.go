package twins

import (
	"context"
	"fmt"
	"math"
	goruntime "runtime"
	"time"

	"github.com/admitc/admitc/runtime"
)

// Measurement is a fixture's translation measured against its twin.
type Measurement struct {
	Fixture string
	// Resources is how many resources each decision pass admits.
	Resources int
	// CompileOriginal and CompileTwin are the compile times.
	CompileOriginal, CompileTwin time.Duration
	// CELOriginal and CELTwin are the CEL sizes (CELSize) of the emitted
	// ValidatingAdmissionPolicies.
	CELOriginal, CELTwin int
	// DecideOriginal and DecideTwin are the time of one pass over the
	// fixture's resources (each admitted once, as a CREATE) in the fastest
	// timing round.
	DecideOriginal, DecideTwin time.Duration
}

// SizeRatio is the translation's CEL size over the twin's.
func (m Measurement) SizeRatio() float64 { return float64(m.CELOriginal) / float64(m.CELTwin) }

// TimeRatio is the translation's decision time over the twin's.
func (m Measurement) TimeRatio() float64 {
	return float64(m.DecideOriginal) / float64(m.DecideTwin)
}

// Timing says how decision time is measured: after a warm-up pass, Rounds
// rounds, each timing as many passes of the translation and then of the
// twin as take at least Round (counted once, before the first round). Each
// engine's fastest round counts: on a shared machine other work only ever
// adds time, and the fastest round is the one it disturbed least, so the
// ratio of the fastest rounds varies far less from run to run than that of
// the medians.
type Timing struct {
	Round  time.Duration
	Rounds int
}

// Measure compiles and measures one fixture.
func Measure(f Fixture, t Timing) (Measurement, error) {
	m := Measurement{Fixture: f.Name, Resources: len(f.Resources)}
	original, err := Compile(f.Original)
	if err != nil {
		return m, err
	}
	twin, err := Compile(f.Twin)
	if err != nil {
		return m, err
	}
	m.CompileOriginal, m.CompileTwin = original.Elapsed, twin.Elapsed
	if m.CELOriginal, err = CELSize(original.VAP); err != nil {
		return m, err
	}
	if m.CELTwin, err = CELSize(twin.VAP); err != nil {
		return m, err
	}
	eo, err := original.Engine()
	if err != nil {
		return m, fmt.Errorf("%s: %w", f.Original, err)
	}
	et, err := twin.Engine()
	if err != nil {
		return m, fmt.Errorf("%s: %w", f.Twin, err)
	}
	err = m.timePasses(f, eo, et, t)
	return m, err
}

// timePasses times decision passes of a (the translation) and b (the
// twin) over f's resources.
func (m *Measurement) timePasses(f Fixture, a, b *runtime.Engine, t Timing) error {
	passA, passB := passer(f, a), passer(f, b)
	goruntime.GC()
	na, err := calibrate(passA, t.Round)
	if err != nil {
		return fmt.Errorf("%s (translation): %w", f.Name, err)
	}
	nb, err := calibrate(passB, t.Round)
	if err != nil {
		return fmt.Errorf("%s (twin): %w", f.Name, err)
	}
	m.DecideOriginal, m.DecideTwin = time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range max(t.Rounds, 1) {
		da, err := timeN(passA, na)
		if err != nil {
			return err
		}
		db, err := timeN(passB, nb)
		if err != nil {
			return err
		}
		m.DecideOriginal, m.DecideTwin = min(m.DecideOriginal, da), min(m.DecideTwin, db)
	}
	return nil
}

// passer is one pass of e over f's resources.
func passer(f Fixture, e *runtime.Engine) func() error {
	ctx := context.Background()
	return func() error {
		for _, o := range f.Resources {
			if _, err := e.Admit(ctx, Request(o, f.Params)); err != nil {
				return fmt.Errorf("%s: %w", ResourceName(o), err)
			}
		}
		return nil
	}
}

// calibrate runs pass once to warm up, then counts how many passes take
// at least round.
func calibrate(pass func() error, round time.Duration) (int, error) {
	if err := pass(); err != nil {
		return 0, err
	}
	n, start := 0, time.Now()
	for n == 0 || time.Since(start) < round {
		if err := pass(); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// timeN is the mean time of n passes.
func timeN(pass func() error, n int) (time.Duration, error) {
	start := time.Now()
	for range n {
		if err := pass(); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(n), nil
}
