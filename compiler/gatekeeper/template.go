package gatekeeper

import (
	"fmt"
	"slices"
	"strings"

	"github.com/admitc/admitc/ir"
)

// Gatekeeper's prepended variables (pkg/drivers/k8scel): the object, or the
// old object on DELETE; and the constraint's spec.parameters, or null.
const (
	anyObjectExpression = `has(request.operation) && request.operation == "DELETE" && object == null ? oldObject : object`
	paramsExpression    = `!has(params.spec) ? null : !has(params.spec.parameters) ? null : params.spec.parameters`
	internalPrefix      = "gatekeeper_internal_"
)

// template lowers a ConstraintTemplate to one imported policy.
func (r *reader) template() *ir.Policy {
	var t constraintTemplate
	if ds := r.doc.Decode(&t, "a ConstraintTemplate"); len(ds) > 0 {
		r.diags = append(r.diags, ds...)
		return nil
	}
	kind := t.Spec.CRD.Spec.Names.Kind
	switch {
	case t.Metadata.Name == "":
		r.errorf("metadata.name", "missing metadata.name")
	case kind == "":
		r.errorf("spec.crd.spec.names.kind", "missing spec.crd.spec.names.kind: the kind of this template's constraints")
	case t.Metadata.Name != strings.ToLower(kind):
		r.errorf("metadata.name", "template name %q must be the lower-case constraint kind %q (Gatekeeper refuses it otherwise)", t.Metadata.Name, strings.ToLower(kind))
	}
	if len(t.Spec.Targets) != 1 || t.Spec.Targets[0].Target != Target {
		r.errorf("spec.targets", "a ConstraintTemplate needs exactly one target, %s", Target)
		return nil
	}
	target := t.Spec.Targets[0]
	src, path := r.celSource(target)
	if src == nil || len(r.diags) > 0 {
		return nil
	}
	p := &ir.Policy{
		Name: t.Metadata.Name, Type: Type, Kind: ir.Validating, Origin: r.origin(""),
		FailurePolicy:    r.failurePolicy(src.FailurePolicy, path+".failurePolicy"),
		ParamKind:        &ir.ParamKind{APIVersion: ParamAPIVersion, Kind: kind},
		MatchConstraints: &ir.MatchResources{ResourceRules: []ir.ResourceRule{everything(r.operations(target.Operations))}},
	}
	p.Variables = append(r.prepended(path), r.variables(src.Variables, path+".variables")...)
	p.MatchConditions = append(r.named(src.MatchConditions, path+".matchCondition"), matchConditions(p.Origin)...)
	p.Validations = r.validations(src.Validations, path+".validations")
	if hasRego(target) {
		p.Notes = append(p.Notes, RegoNotRun)
	}
	return p
}

// RegoNotRun is the note on a template with both Rego and CEL.
// Gatekeeper runs one engine per template, the first by driver priority
// (frameworks' driverForTemplate): with its CEL driver on
// (--enable-k8s-native-validation, the default, in gator too) the CEL
// alone decides and the Rego is never run.
const RegoNotRun = "has Rego too: admitc judges by its " + CELEngine + " CEL alone, as Gatekeeper does with its CEL driver on (--enable-k8s-native-validation, the default); " +
	"the Rego, which Gatekeeper runs instead when that flag is off, is not evaluated, so nothing here checks that it agrees with the CEL"

// hasRego says whether a target has Rego: spec.targets[].rego or a code
// entry of the Rego engine.
func hasRego(t templateTarget) bool {
	if t.Rego != "" {
		return true
	}
	for _, c := range t.Code {
		if c.Engine == "Rego" {
			return true
		}
	}
	return false
}

// celSource finds and strictly decodes the target's K8sNativeValidation
// source; path is its field path.
func (r *reader) celSource(t templateTarget) (*celSource, string) {
	for i, c := range t.Code {
		if c.Engine != CELEngine {
			continue
		}
		path := fmt.Sprintf("spec.targets[0].code[%d].source", i)
		var src celSource
		if ds := r.doc.DecodeAt(path, &src, "a "+CELEngine+" source"); len(ds) > 0 {
			r.diags = append(r.diags, ds...)
			return nil, ""
		}
		if len(src.Validations) == 0 {
			r.errorf(path, "a %s source needs validations", CELEngine)
		}
		return &src, path
	}
	if t.Rego != "" || len(t.Code) > 0 {
		r.errorf("spec.targets[0]", "%s: this template has Rego and no %s code; admitc runs only Gatekeeper's CEL engine", RegoOnly, CELEngine)
	} else {
		r.errorf("spec.targets[0]", "the target has no code: add a %s code entry", CELEngine)
	}
	return nil, ""
}

func (r *reader) failurePolicy(f *string, path string) ir.FailurePolicy {
	switch {
	case f == nil || *f == string(ir.Fail):
		return ir.Fail
	case *f == string(ir.Ignore):
		return ir.Ignore
	}
	r.errorf(path, "failurePolicy must be Fail or Ignore, got %q", *f)
	return ir.Fail
}

// operations are the target's operations, CREATE and UPDATE by default.
func (r *reader) operations(ops []string) []ir.Operation {
	if len(ops) == 0 {
		return []ir.Operation{ir.Create, ir.Update}
	}
	var out []ir.Operation
	for i, o := range ops {
		if !slices.Contains([]string{"*", "CREATE", "UPDATE", "DELETE", "CONNECT"}, o) {
			r.errorf(fmt.Sprintf("spec.targets[0].operations[%d]", i), "operation must be *, CREATE, UPDATE, DELETE or CONNECT, got %q", o)
		}
		out = append(out, ir.Operation(o))
	}
	return out
}

func (r *reader) prepended(path string) []ir.NamedExpression {
	o := r.origin(path)
	o.Path = path + "(generated)"
	return []ir.NamedExpression{
		{Name: "anyObject", Expression: anyObjectExpression, Origin: o},
		{Name: "params", Expression: paramsExpression, Origin: o},
	}
}

func (r *reader) variables(vs []namedExpression, list string) []ir.NamedExpression {
	for i, v := range vs {
		if v.Name == "params" || v.Name == "anyObject" || strings.HasPrefix(v.Name, internalPrefix) {
			r.errorf(fmt.Sprintf("%s[%d].name", list, i), "variable name %q is reserved by Gatekeeper (params, anyObject and %s*)", v.Name, internalPrefix)
		}
	}
	return r.named(vs, list)
}

func (r *reader) named(items []namedExpression, list string) []ir.NamedExpression {
	var out []ir.NamedExpression
	for i, v := range items {
		out = append(out, ir.NamedExpression{Name: v.Name, Expression: v.Expression, Origin: r.origin(fmt.Sprintf("%s[%d].expression", list, i))})
	}
	return out
}

func (r *reader) validations(vs []celValidation, list string) []ir.Validation {
	var out []ir.Validation
	for i, v := range vs {
		path := fmt.Sprintf("%s[%d]", list, i)
		val := ir.Validation{Expression: v.Expression, Message: v.Message, MessageExpression: v.MessageExpression, Origin: r.origin(path + ".expression")}
		if v.MessageExpression != "" {
			mo := r.origin(path + ".messageExpression")
			val.MessageExpressionOrigin = &mo
		}
		out = append(out, val)
	}
	return out
}
