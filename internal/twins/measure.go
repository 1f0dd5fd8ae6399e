package twins

import (
	"context"
	"fmt"
	"math"
	goruntime "runtime"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/admitc/admitc/internal/defaults"
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
	// ServedOriginal and ServedTwin are the same over the resources as the
	// API server hands them to admission (defaults.Apply: decoded into
	// their type, defaulted, encoded again), as a webhook sees them. A
	// typed translation judges a raw manifest that lacks a field the API
	// server always sends (a container's resources) by its exact form, so
	// the two times differ most there.
	ServedOriginal, ServedTwin time.Duration
}

// SizeRatio is the translation's CEL size over the twin's.
func (m Measurement) SizeRatio() float64 { return float64(m.CELOriginal) / float64(m.CELTwin) }

// TimeRatio is the translation's decision time over the twin's.
func (m Measurement) TimeRatio() float64 {
	return float64(m.DecideOriginal) / float64(m.DecideTwin)
}

// ServedRatio is TimeRatio over the resources as the API server sends them.
func (m Measurement) ServedRatio() float64 {
	return float64(m.ServedOriginal) / float64(m.ServedTwin)
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
	if m.DecideOriginal, m.DecideTwin, err = timePasses(f, f.Resources, eo, et, t); err != nil {
		return m, err
	}
	served := make([]*unstructured.Unstructured, len(f.Resources))
	for i, o := range f.Resources {
		if served[i], err = defaults.Apply(o); err != nil {
			return m, fmt.Errorf("%s: %s: %w", f.Name, ResourceName(o), err)
		}
	}
	m.ServedOriginal, m.ServedTwin, err = timePasses(f, served, eo, et, t)
	return m, err
}

// timePasses times decision passes of a (the translation) and b (the
// twin) over resources, the fastest round of each.
func timePasses(f Fixture, resources []*unstructured.Unstructured, a, b *runtime.Engine, t Timing) (da, db time.Duration, err error) {
	passA, passB := passer(f, resources, a), passer(f, resources, b)
	goruntime.GC()
	na, err := calibrate(passA, t.Round)
	if err != nil {
		return 0, 0, fmt.Errorf("%s (translation): %w", f.Name, err)
	}
	nb, err := calibrate(passB, t.Round)
	if err != nil {
		return 0, 0, fmt.Errorf("%s (twin): %w", f.Name, err)
	}
	da, db = time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range max(t.Rounds, 1) {
		ra, err := timeN(passA, na)
		if err != nil {
			return 0, 0, err
		}
		rb, err := timeN(passB, nb)
		if err != nil {
			return 0, 0, err
		}
		da, db = min(da, ra), min(db, rb)
	}
	return da, db, nil
}

// passer is one pass of e over resources.
func passer(f Fixture, resources []*unstructured.Unstructured, e *runtime.Engine) func() error {
	ctx := context.Background()
	return func() error {
		for _, o := range resources {
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
