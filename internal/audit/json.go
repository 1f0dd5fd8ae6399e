package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/admitc/admitc/ir"
)

// JSONVersion identifies the schema of the JSON output.
const JSONVersion = "admitc.dev/audit/v1"

// JSONWriter streams the audit as one JSON document: the objects some
// policy selected, each with its results, in listing order, as they are
// judged; then, on Close, per-policy counts, coverage and totals.
type JSONWriter struct {
	w      *bufio.Writer
	asDeny bool
	n      int
}

// NewJSONWriter returns a JSONWriter writing to w.
func NewJSONWriter(w io.Writer, asDeny bool) *JSONWriter {
	return &JSONWriter{w: bufio.NewWriterSize(w, 64<<10), asDeny: asDeny}
}

// jsonObject is one object of the JSON output.
type jsonObject struct {
	Resource string `json:"resource"`
	*ObjectResult
	Denied bool `json:"denied"`
}

// Object implements Sink.
func (j *JSONWriter) Object(o *ObjectResult) error {
	sep := ",\n    "
	if j.n == 0 {
		if _, err := fmt.Fprintf(j.w, "{\n  \"apiVersion\": %q,\n  \"asDeny\": %t,\n  \"objects\": [\n    ", JSONVersion, j.asDeny); err != nil {
			return err
		}
		sep = ""
	}
	j.n++
	data, err := json.MarshalIndent(jsonObject{Resource: o.Resource.GroupResource().String(), ObjectResult: o, Denied: o.Denied()}, "    ", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(j.w, sep); err != nil {
		return err
	}
	_, err = j.w.Write(data)
	return err
}

// jsonPolicy is one policy's counts in the JSON output.
type jsonPolicy struct {
	Policy     string       `json:"policy"`
	Name       string       `json:"name"`
	Rule       string       `json:"rule,omitempty"`
	Operation  ir.Operation `json:"operation,omitempty"`
	Pass       int          `json:"pass"`
	Fail       int          `json:"fail"`
	Error      int          `json:"error"`
	Skip       int          `json:"skip"`
	Denied     int          `json:"denied"`
	SkipReason string       `json:"skipReason,omitempty"`
	NotAudited string       `json:"notAudited,omitempty"`
}

// jsonResource is one resource's coverage in the JSON output.
type jsonResource struct {
	Resource string `json:"resource"`
	ResourceCoverage
	Error string `json:"error,omitempty"`
}

// jsonTail is what follows the objects.
type jsonTail struct {
	Policies []jsonPolicy `json:"policies"`
	Coverage struct {
		Complete    bool           `json:"complete"`
		Interrupted bool           `json:"interrupted,omitempty"`
		Resources   []jsonResource `json:"resources"`
	} `json:"coverage"`
	Summary struct {
		Judged         int     `json:"judged"`
		Selected       int     `json:"selected"`
		Failed         int     `json:"failed"`
		Denied         int     `json:"denied"`
		ElapsedSeconds float64 `json:"elapsedSeconds"`
	} `json:"summary"`
}

// Close writes the per-policy counts, the coverage and the totals, and
// ends the document.
func (j *JSONWriter) Close(t *Tally, cov *Coverage) error {
	if j.n == 0 {
		fmt.Fprintf(j.w, "{\n  \"apiVersion\": %q,\n  \"asDeny\": %t,\n  \"objects\": [", JSONVersion, j.asDeny)
	} else {
		io.WriteString(j.w, "\n  ")
	}
	io.WriteString(j.w, "]")
	tl := tail(t, cov)
	for _, field := range []struct {
		name  string
		value any
	}{{"policies", tl.Policies}, {"coverage", tl.Coverage}, {"summary", tl.Summary}} {
		data, err := json.MarshalIndent(field.value, "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(j.w, ",\n  %q: %s", field.name, data)
	}
	io.WriteString(j.w, "\n}\n")
	return j.w.Flush()
}

func tail(t *Tally, cov *Coverage) jsonTail {
	out := jsonTail{Policies: []jsonPolicy{}}
	for _, pt := range t.Policies {
		p := pt.Policy
		out.Policies = append(out.Policies, jsonPolicy{Policy: p.IR.Name, Name: p.Name(), Rule: p.Rule(), Operation: p.Operation,
			Pass: pt.Pass, Fail: pt.Fail, Error: pt.Error, Skip: pt.Skip, Denied: pt.Deny, SkipReason: pt.SkipReason, NotAudited: p.NotAudited})
	}
	out.Coverage.Complete, out.Coverage.Interrupted = cov.Complete(), cov.Interrupted
	out.Coverage.Resources = []jsonResource{}
	for _, r := range cov.Resources {
		jr := jsonResource{Resource: r.Target.String(), ResourceCoverage: r}
		if r.Err != nil {
			jr.Error = r.Err.Error()
		}
		out.Coverage.Resources = append(out.Coverage.Resources, jr)
	}
	out.Summary.Judged, out.Summary.Selected, out.Summary.Failed, out.Summary.Denied = cov.Judged(), t.Objects, t.Failed, t.Denied
	out.Summary.ElapsedSeconds = cov.Elapsed.Seconds()
	return out
}
