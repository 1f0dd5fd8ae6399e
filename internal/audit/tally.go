package audit

// Tally counts results per policy and keeps each policy's first failures:
// what the table prints, and what decides the exit code. Its memory does
// not grow with the number of objects.
type Tally struct {
	// Policies are the audited policies' counts, in the set's order.
	Policies []*PolicyTally
	// Objects were selected by some policy; Failed have a fail or an
	// error; Denied would be refused by the API server.
	Objects, Failed, Denied int

	byName map[string]*PolicyTally
	max    int
}

// PolicyTally is one policy's counts over every object it selected.
type PolicyTally struct {
	Policy                        *Policy
	Pass, Fail, Error, Skip, Deny int
	// Failures are the first fails and errors, in listing order.
	Failures []Failure
	// SkipReason is the first skip's reason.
	SkipReason string
}

// Failure is one fail or error of a policy on an object.
type Failure struct {
	Object string `json:"object"`
	Result PolicyResult
}

// NewTally returns a Tally of policies keeping at most maxFailures
// failures per policy.
func NewTally(policies []*Policy, maxFailures int) *Tally {
	t := &Tally{byName: map[string]*PolicyTally{}, max: maxFailures}
	for _, p := range policies {
		pt := &PolicyTally{Policy: p}
		t.Policies = append(t.Policies, pt)
		t.byName[p.IR.Name] = pt
	}
	return t
}

// Object implements Sink.
func (t *Tally) Object(o *ObjectResult) error {
	t.Objects++
	if o.Failed() {
		t.Failed++
	}
	if o.Denied() {
		t.Denied++
	}
	for _, r := range o.Results {
		if pt := t.byName[r.Policy]; pt != nil {
			pt.add(o, r, t.max)
		}
	}
	return nil
}

func (pt *PolicyTally) add(o *ObjectResult, r PolicyResult, max int) {
	switch r.Status {
	case Pass:
		pt.Pass++
	case Skip:
		pt.Skip++
		if pt.SkipReason == "" {
			pt.SkipReason = r.Message
		}
	case Fail, Error:
		if r.Status == Fail {
			pt.Fail++
		} else {
			pt.Error++
		}
		if len(pt.Failures) < max {
			pt.Failures = append(pt.Failures, Failure{Object: o.Ref(), Result: r})
		}
	}
	if r.Denied {
		pt.Deny++
	}
}
