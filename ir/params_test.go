package ir_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/admitc/admitc/ir"
)

// TestParamSources: every binding's paramRef whose parameter objects are
// not compiled in, once, sorted; a policy in admitc's own format reads
// through its own paramRef; a paramRef with neither name nor selector,
// or without a paramKind, reads nothing.
func TestParamSources(t *testing.T) {
	cm := &ir.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	web := &ir.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	imported := ir.Policy{Name: "imported", ParamKind: cm, MatchConstraints: &ir.MatchResources{}, Bindings: []ir.Binding{
		{Name: "by-name", ParamRef: &ir.ParamRef{Name: "limit", Namespace: "params"}},
		{Name: "same-again", ParamRef: &ir.ParamRef{Name: "limit", Namespace: "params", ParameterNotFoundAction: ir.ParamAllow}},
		{Name: "by-label", ParamRef: &ir.ParamRef{Selector: web}},
		{Name: "none", ParamRef: &ir.ParamRef{}},
		{Name: "compiled-in", ParamRef: &ir.ParamRef{Name: "c"}, Params: []map[string]any{{"kind": "ConfigMap"}}},
	}}
	own := ir.Policy{Name: "own", ParamKind: &ir.ParamKind{APIVersion: "example.com/v1", Kind: "Limit"}, ParamRef: &ir.ParamRef{Name: "max"}}
	noKind := ir.Policy{Name: "no-kind", ParamRef: &ir.ParamRef{Name: "ignored"}}
	set := &ir.PolicySet{Policies: []ir.Policy{own, imported, noKind}}
	assert.Equal(t, []ir.ParamSource{
		{Kind: *own.ParamKind, Name: "max"},
		{Kind: *cm, Selector: web},
		{Kind: *cm, Namespace: "params", Name: "limit"},
	}, set.ParamSources())
}
