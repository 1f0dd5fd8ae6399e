package compiler

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/admitc/admitc/ir"
)

// lower reads the type's own fields and fills in the policy's CEL.
func (r *reader) lower(d *policyDecl) {
	p, obj, o := &d.policy, d.obj, d.policy.Origin
	switch p.Type {
	case TypeDisallowPrivileged, TypeRunAsNonRoot, TypeMemoryLimit, TypeImageDigest, TypeAllowedRegistries:
		var vars []ir.NamedExpression
		var v ir.Validation
		switch p.Type {
		case TypeDisallowPrivileged:
			vars, v = lowerPrivileged(o)
		case TypeRunAsNonRoot:
			vars, v = lowerRunAsNonRoot(o)
		case TypeMemoryLimit:
			vars, v = lowerMemoryLimit(o)
		case TypeImageDigest:
			vars, v = lowerDigest(o)
		case TypeAllowedRegistries:
			registries := r.requiredList(obj, "registries", "the registries images may come from, e.g. [registry.k8s.io]")
			p.Parameters = &ir.Parameters{Registries: registries}
			vars, v = lowerRegistries(registries, o)
		}
		p.Variables = append(podVariables(d.kinds, o), vars...)
		p.Validations = []ir.Validation{v}
	case TypeRequiredLabels:
		labels := r.requiredList(obj, "labels", "the label keys every pod must carry, e.g. [team]")
		p.Parameters = &ir.Parameters{Labels: labels}
		vars, v := lowerRequiredLabels(d.kinds, labels, o)
		p.Variables, p.Validations = vars, []ir.Validation{v}
	case TypeNoHostPath:
		paths, origins, _ := obj.strList("allowedPaths")
		for i, path := range paths {
			if !strings.HasPrefix(path, "/") {
				r.errorf(origins[i], "allowed path %q must be absolute", path)
			}
		}
		p.Parameters = &ir.Parameters{AllowedPaths: paths}
		vars, v := lowerNoHostPath(paths, o)
		p.Variables = append(podVariables(d.kinds, o)[:2], vars...)
		p.Validations = []ir.Validation{v}
	case TypeDefaultRequests:
		requests := r.readRequests(obj)
		p.Parameters = &ir.Parameters{Requests: requests}
		p.Variables = []ir.NamedExpression{
			podVariables(d.kinds, o)[0],
			{Name: "specPointer", Expression: byKind(d.kinds, func(k ir.WorkloadKind) string { return celString(pointer(k.PodSpecPath)) }), Origin: o},
		}
		p.Mutations = []ir.Mutation{lowerDefaultRequests(requests, o)}
	case TypeAddLabels:
		labels := r.readLabels(obj)
		p.Parameters = &ir.Parameters{SetLabels: labels}
		cond, m := lowerAddLabels(labels, o)
		p.MatchConditions, p.Mutations = []ir.NamedExpression{cond}, []ir.Mutation{m}
	case TypeCEL:
		r.readCEL(obj, p)
	}
}

func (r *reader) requiredList(obj *object, name, hint string) []string {
	items, origins, present := obj.strList(name)
	if !present {
		obj.missing(name, hint)
		return nil
	}
	if len(items) == 0 && len(origins) == 0 {
		f, _ := obj.get(name)
		r.errorf(f.origin, "%s must not be empty: %s", name, hint)
	}
	for i, s := range items {
		if strings.TrimSpace(s) == "" {
			r.errorf(origins[i], "%s entries must not be empty", name)
		}
	}
	return items
}

func (r *reader) readRequests(obj *object) map[string]string {
	m, keys, present := obj.strMap("requests")
	if !present {
		obj.missing("requests", `the requests to add, e.g. {"cpu": "100m", "memory": "128Mi"}`)
		return map[string]string{}
	}
	f, _ := obj.get("requests")
	for _, k := range keys {
		if _, err := resource.ParseQuantity(m[k]); err != nil {
			r.errorf(ir.Origin{File: f.origin.File, Line: f.node.Line, Column: f.node.Column, Path: joinPath(f.origin.Path, k)}, "%q is not a quantity: %v", m[k], err)
		}
	}
	if len(keys) == 0 {
		r.errorf(f.origin, "requests must not be empty")
	}
	return m
}

func (r *reader) readLabels(obj *object) map[string]string {
	m, keys, present := obj.strMap("labels")
	if !present {
		obj.missing("labels", `the labels to set, e.g. {"cloudcaptain.io/mutated-by": "admitc"}`)
		return map[string]string{}
	}
	f, _ := obj.get("labels")
	for _, k := range keys {
		o := ir.Origin{File: f.origin.File, Line: f.node.Line, Column: f.node.Column, Path: joinPath(f.origin.Path, k)}
		for _, msg := range validation.IsQualifiedName(k) {
			r.errorf(o, "invalid label key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(m[k]) {
			r.errorf(o, "invalid label value %q: %s", m[k], msg)
		}
	}
	if len(keys) == 0 {
		r.errorf(f.origin, "labels must not be empty")
	}
	return m
}

var celIdentifier = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (r *reader) readCEL(obj *object, p *ir.Policy) {
	r.readParams(obj, p)
	p.Variables = r.readNamed(obj, "variables", "variable", func(name string) []string {
		if !celIdentifier.MatchString(name) {
			return []string{"must be a CEL identifier (letters, digits and _; not starting with a digit)"}
		}
		return nil
	})
	p.MatchConditions = r.readNamed(obj, "matchConditions", "match condition", validation.IsQualifiedName)
	items, ok := obj.list("validations")
	if !ok || len(items) == 0 {
		obj.missing("validations", "a cel policy needs at least one validation with an expression")
	}
	for _, it := range items {
		v := r.object(it, "a validation")
		val := ir.Validation{Origin: it.origin}
		val.Expression, val.Origin = r.expression(v, "expression")
		msg, mo := v.str("message", false, "")
		if strings.ContainsAny(msg, "\n\r") {
			r.errorf(mo, "message must not contain line breaks")
		}
		val.Message = msg
		if me, meo := v.str("messageExpression", false, ""); me != "" {
			val.MessageExpression, val.MessageExpressionOrigin = me, &meo
			r.exprNodes[meo.Path] = fieldAt(v, "messageExpression")
		}
		v.done("a validation")
		p.Validations = append(p.Validations, val)
	}
	r.readAuditAnnotations(obj, p)
}

func fieldAt(o *object, name string) field { f, _ := o.get(name); return f }

// expression reads a required CEL expression field and remembers its node so
// CEL error positions can be mapped back into the file.
func (r *reader) expression(o *object, name string) (string, ir.Origin) {
	expr, origin := o.str(name, true, "a CEL expression")
	if expr != "" {
		r.exprNodes[origin.Path] = fieldAt(o, name)
		if strings.TrimSpace(expr) == "" {
			r.errorf(origin, "%s must not be blank", name)
		}
	}
	return expr, origin
}

func (r *reader) readNamed(obj *object, listName, what string, check func(string) []string) []ir.NamedExpression {
	items, _ := obj.list(listName)
	var out []ir.NamedExpression
	seen := map[string]ir.Origin{}
	for _, it := range items {
		o := r.object(it, "a "+what)
		name, no := o.str("name", true, "")
		if name != "" {
			for _, msg := range check(name) {
				r.errorf(no, "invalid %s name %q: %s", what, name, msg)
			}
			if first, dup := seen[name]; dup {
				r.errorf(no, "%s %q is already declared at %s", what, name, fmtOrigin(first))
			}
			seen[name] = no
		}
		expr, eo := r.expression(o, "expression")
		o.done("a " + what)
		out = append(out, ir.NamedExpression{Name: name, Expression: expr, Origin: eo})
	}
	return out
}

func (r *reader) readAuditAnnotations(obj *object, p *ir.Policy) {
	items, _ := obj.list("auditAnnotations")
	for _, it := range items {
		o := r.object(it, "an audit annotation")
		key, ko := o.str("key", true, "")
		if key != "" && p.Name != "" {
			for _, msg := range validation.IsQualifiedName(p.Name + "/" + key) {
				r.errorf(ko, "invalid audit annotation key %q: %s", key, msg)
			}
		}
		expr, eo := r.expression(o, "valueExpression")
		o.done("an audit annotation")
		p.AuditAnnotations = append(p.AuditAnnotations, ir.AuditAnnotation{Key: key, ValueExpression: expr, Origin: eo})
	}
}

func (r *reader) readParams(obj *object, p *ir.Policy) {
	if f, ok := obj.get("paramKind"); ok {
		o := r.object(f, "paramKind")
		av, _ := o.str("apiVersion", true, "e.g. v1")
		k, _ := o.str("kind", true, "e.g. ConfigMap")
		o.done("paramKind")
		p.ParamKind = &ir.ParamKind{APIVersion: av, Kind: k}
	}
	f, ok := obj.get("paramRef")
	if !ok {
		if p.ParamKind != nil {
			obj.missing("paramRef", "a policy with paramKind needs paramRef.name to say which object holds its parameters")
		}
		return
	}
	if p.ParamKind == nil {
		r.errorf(f.origin, "paramRef needs paramKind: declare the kind of the parameter object")
	}
	o := r.object(f, "paramRef")
	ref := &ir.ParamRef{ParameterNotFoundAction: ir.ParamDeny}
	ref.Name, _ = o.str("name", true, "the name of the parameter object")
	ref.Namespace, _ = o.str("namespace", false, "")
	if a, ao := o.str("parameterNotFoundAction", false, ""); a != "" {
		switch ir.ParameterNotFoundAction(a) {
		case ir.ParamDeny, ir.ParamAllow:
			ref.ParameterNotFoundAction = ir.ParameterNotFoundAction(a)
		default:
			r.errorf(ao, "parameterNotFoundAction must be Deny or Allow, got %q", a)
		}
	}
	o.done("paramRef")
	p.ParamRef = ref
}
