package compiler

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/admitc/admitc/ir"
)

// policyDecl is one parsed entry of a file's policies list, before lowering.
type policyDecl struct {
	obj    *object
	policy ir.Policy
	info   typeInfo
	kinds  []ir.WorkloadKind
}

func (r *reader) readFile(root field) []*policyDecl {
	top := r.object(root, "a policy file")
	items, ok := top.list("policies")
	if !ok && root.node.Kind == yaml.MappingNode {
		top.missing("policies", `a policy file is an object with a "policies" list`)
	}
	top.done("a policy file")
	var decls []*policyDecl
	for _, item := range items {
		if d := r.readPolicy(item); d != nil {
			decls = append(decls, d)
		}
	}
	return decls
}

func (r *reader) readPolicy(f field) *policyDecl {
	obj := r.object(f, "a policy")
	if obj.f.node.Kind != yaml.MappingNode {
		return nil
	}
	d := &policyDecl{obj: obj}
	p := &d.policy
	p.Origin = f.origin
	var nameOrigin ir.Origin
	p.Name, nameOrigin = obj.str("name", true, "every policy needs a unique name")
	if p.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(p.Name) {
			r.errorf(nameOrigin, "invalid policy name %q: %s", p.Name, msg)
		}
	}
	var typeOrigin ir.Origin
	p.Type, typeOrigin = obj.str("type", true, "one of "+strings.Join(TypeNames(), ", "))
	info, known := types[p.Type]
	if p.Type != "" && !known {
		r.errorf(typeOrigin, "unknown policy type %q (known types: %s)", p.Type, strings.Join(TypeNames(), ", "))
	}
	d.info = info
	p.Kind = info.kind
	r.readFailurePolicy(obj, p)
	if known {
		r.readActions(obj, p)
		d.kinds = r.readMatch(obj, p)
	}
	return d
}

func (r *reader) readFailurePolicy(obj *object, p *ir.Policy) {
	fp, o := obj.str("failurePolicy", false, "")
	switch fp {
	case "", string(ir.Fail):
		p.FailurePolicy = ir.Fail
	case string(ir.Ignore):
		p.FailurePolicy = ir.Ignore
	default:
		r.errorf(o, "failurePolicy must be Fail or Ignore, got %q", fp)
	}
}

func (r *reader) readActions(obj *object, p *ir.Policy) {
	if p.Kind == ir.Mutating {
		rp, o := obj.str("reinvocationPolicy", false, "")
		switch rp {
		case "", string(ir.ReinvokeNever):
			p.ReinvocationPolicy = ir.ReinvokeNever
		case string(ir.ReinvokeIfNeeded):
			p.ReinvocationPolicy = ir.ReinvokeIfNeeded
		default:
			r.errorf(o, "reinvocationPolicy must be Never or IfNeeded, got %q", rp)
		}
		if f, ok := obj.get("actions"); ok {
			r.errorf(f.origin, "%s is a mutating type and takes no actions: mutations are not denied, warned or audited", p.Type)
		}
		return
	}
	actions, origins, present := obj.strList("actions")
	if !present {
		p.Actions = []ir.Action{ir.Deny}
		return
	}
	f, _ := obj.get("actions")
	if len(actions) == 0 && f.node.Kind == yaml.SequenceNode {
		r.errorf(f.origin, "actions must not be empty: use [Deny] to enforce or [Warn, Audit] to roll out")
		return
	}
	seen := map[ir.Action]bool{}
	for i, a := range actions {
		act := ir.Action(a)
		switch act {
		case ir.Deny, ir.Warn, ir.Audit:
		default:
			r.errorf(origins[i], "unknown action %q: actions are Deny, Warn and Audit", a)
			continue
		}
		if seen[act] {
			r.errorf(origins[i], "action %q is listed twice", a)
			continue
		}
		seen[act] = true
		p.Actions = append(p.Actions, act)
	}
	if seen[ir.Deny] && seen[ir.Warn] {
		r.errorf(f.origin, "Deny and Warn together report the same failure twice; ValidatingAdmissionPolicyBinding rejects that combination (use [Deny] or [Warn, Audit])")
	}
}

func (r *reader) readMatch(obj *object, p *ir.Policy) []ir.WorkloadKind {
	kinds := ir.PodKinds
	p.Match.Operations = []ir.Operation{ir.Create, ir.Update}
	f, ok := obj.get("match")
	if ok {
		m := r.object(f, "match")
		if names, origins, present := m.strList("kinds"); present {
			kinds = r.readKinds(names, origins, p.Type == TypeCEL)
		}
		if ops, origins, present := m.strList("operations"); present {
			p.Match.Operations = r.readOperations(ops, origins, p.Type == TypeCEL)
		}
		m.done("match")
	}
	for _, k := range kinds {
		res := k.Resource
		if !types[p.Type].containers {
			res.Subresources = nil
		}
		p.Match.Resources = append(p.Match.Resources, res)
	}
	return kinds
}

func (r *reader) readKinds(names []string, origins []ir.Origin, anyKind bool) []ir.WorkloadKind {
	var out []ir.WorkloadKind
	seen := map[string]bool{}
	for i, n := range names {
		k, ok := ir.WorkloadKindByName(n)
		if !ok && anyKind {
			k, ok = ir.OtherKindByName(n)
		}
		if !ok {
			r.errorf(origins[i], "unknown kind %q (this policy type judges %s)", n, strings.Join(kindNames(anyKind), ", "))
			continue
		}
		if seen[n] {
			r.errorf(origins[i], "kind %q is listed twice", n)
			continue
		}
		seen[n] = true
		out = append(out, k)
	}
	if len(names) == 0 {
		r.errorf(origins0(origins), "match.kinds must not be empty; leave it out to match Pods and every workload kind")
	}
	return out
}

func origins0(os []ir.Origin) ir.Origin {
	if len(os) > 0 {
		return os[0]
	}
	return ir.Origin{}
}

func kindNames(anyKind bool) []string {
	var out []string
	for _, k := range ir.PodKinds {
		out = append(out, k.Resource.Kind)
	}
	if anyKind {
		for _, k := range ir.OtherKinds {
			out = append(out, k.Resource.Kind)
		}
	}
	return out
}

func (r *reader) readOperations(ops []string, origins []ir.Origin, anyOp bool) []ir.Operation {
	var out []ir.Operation
	for i, o := range ops {
		op := ir.Operation(o)
		switch {
		case op == ir.Create || op == ir.Update:
		case anyOp && (op == ir.Delete || op == ir.Connect):
		default:
			r.errorf(origins[i], "operation %q is not supported here (use CREATE, UPDATE%s)", o, map[bool]string{true: ", DELETE, CONNECT", false: ""}[anyOp])
			continue
		}
		out = append(out, op)
	}
	return out
}

func fmtOrigin(o ir.Origin) string { return fmt.Sprintf("%s:%d:%d", o.File, o.Line, o.Column) }
