package dialect

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/admitc/admitc/internal/celenv"
	"github.com/admitc/admitc/ir"
)

// Refusal says why one expression of a policy cannot be written for the
// API server.
type Refusal struct {
	Origin ir.Origin
	// Construct names what cannot be written (a library function, a macro).
	Construct string
	Why       string
}

func (r Refusal) String() string {
	return fmt.Sprintf("%s: %s", r.Construct, r.Why)
}

// ForAPIServer returns p with its expressions written in the API server's
// dialect for a cluster of kubeVersion (nil: the runtime's own), deciding
// as p's engine decides, or the reasons it cannot be. A policy already in
// the API server's dialect is returned as it is.
func ForAPIServer(p *ir.Policy, kubeVersion *version.Version) (*ir.Policy, []Refusal) {
	if p.CEL == ir.CELKubernetes {
		return p, nil
	}
	out := *p
	out.CEL, out.CELNamespace = ir.CELKubernetes, ""
	out.MatchConditions = append([]ir.NamedExpression(nil), p.MatchConditions...)
	out.Variables = append([]ir.NamedExpression(nil), p.Variables...)
	out.Validations = append([]ir.Validation(nil), p.Validations...)
	out.AuditAnnotations = append([]ir.AuditAnnotation(nil), p.AuditAnnotations...)
	out.Mutations = append([]ir.Mutation(nil), p.Mutations...)
	var refusals []Refusal
	for _, e := range celenv.CheckedExprs(p) {
		if e.Err != nil {
			refusals = append(refusals, Refusal{Origin: e.Origin, Construct: "CEL that does not compile", Why: e.Err.Error()})
			continue
		}
		text, err := rewrite(e.AST)
		if err != nil {
			refusals = append(refusals, Refusal{Origin: e.Origin, Construct: "CEL", Why: "admitc could not rewrite it: " + err.Error()})
			continue
		}
		set(&out, e, text)
	}
	if p.CEL == ir.CELKyverno {
		kyvernoSemantics(&out)
	}
	if len(refusals) > 0 {
		return nil, refusals
	}
	if refusals = check(&out, kubeVersion); len(refusals) > 0 {
		return nil, refusals
	}
	return &out, nil
}

// set stores the rewritten text of e in p.
func set(p *ir.Policy, e celenv.CheckedExpr, text string) {
	switch e.Field {
	case celenv.FieldVariable:
		p.Variables[e.Index].Expression = text
	case celenv.FieldMatchCondition:
		p.MatchConditions[e.Index].Expression = text
	case celenv.FieldValidation:
		p.Validations[e.Index].Expression = text
	case celenv.FieldMessageExpression:
		p.Validations[e.Index].MessageExpression = text
	case celenv.FieldAuditAnnotation:
		p.AuditAnnotations[e.Index].ValueExpression = text
	case celenv.FieldMutation:
		p.Mutations[e.Index].Expression = text
	}
}

// kyvernoSemantics writes what Kyverno decides beside the CEL text: a
// validation error fails the policy whatever its failurePolicy, and a
// validation without a message reports its index.
func kyvernoSemantics(p *ir.Policy) {
	if p.Kind != ir.Validating {
		return
	}
	if p.FailurePolicy == ir.Ignore {
		p.FailurePolicy = ir.Fail
		if len(p.MatchConditions) > 0 {
			p.Notes = append(p.Notes, "failurePolicy Ignore applies in Kyverno to matchConditions only (a validation error fails the policy), so the emitted policy has failurePolicy Fail; a matchCondition that fails to evaluate denies here where Kyverno skips the policy")
		}
	}
	for i := range p.Validations {
		v := &p.Validations[i]
		switch {
		case v.Message == "" && v.MessageExpression == "":
			v.Message = fmt.Sprintf("CEL expression validation failed at index %d", i)
		case v.MessageExpression != "":
			// Kyverno's message when the messageExpression fails is
			// "failed to evaluate message expression: ERROR"; the API
			// server shows the static message then.
			v.Message = "failed to evaluate message expression"
		}
	}
}

// check type-checks p in the API server's environment of kubeVersion and
// turns each error into a refusal that names what the API server lacks.
func check(p *ir.Policy, kubeVersion *version.Version) []Refusal {
	errs, err := celenv.Check(p, kubeVersion)
	if err != nil {
		return []Refusal{{Origin: p.Origin, Construct: "CEL environment", Why: err.Error()}}
	}
	var out []Refusal
	for _, e := range errs {
		out = append(out, Refusal{Origin: e.Origin, Construct: construct(e.Message), Why: e.Message + " in the API server's CEL environment" + versionNote(kubeVersion)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Origin.Line < out[j].Origin.Line })
	return out
}

var undeclared = regexp.MustCompile(`undeclared reference to '([^']+)'`)

// construct names what an API server compile error is about: Kyverno's
// library function when the API server does not declare it.
func construct(msg string) string {
	if m := undeclared.FindStringSubmatch(msg); m != nil {
		name := m[1]
		if lib, ok := kyvernoFunctions[strings.SplitN(name, ".", 2)[0]]; ok {
			return fmt.Sprintf("Kyverno's %s library (%s)", lib, name)
		}
		return fmt.Sprintf("Kyverno CEL function %s", name)
	}
	return "CEL"
}

func versionNote(v *version.Version) string {
	if v == nil {
		return ""
	}
	return " of Kubernetes " + v.String()
}

// kyvernoFunctions name the library of each of Kyverno's function names
// (and of cel-go's regex extension, which Kyverno installs and the API
// server does not).
var kyvernoFunctions = map[string]string{
	"image": "image", "parseImageReference": "image", "isImage": "image",
	"parseServiceAccount": "user", "regex": "cel-go regex extension",
	"json": "json", "yaml": "yaml", "x509": "x509", "time": "time", "math": "math",
	"random": "random", "sha1": "hash", "sha256": "hash", "md5": "hash",
	"base64": "gzip", "gzip": "gzip", "listObjToMap": "transform", "resource": "resource",
	"globalContext": "globalContext", "http": "http",
}
