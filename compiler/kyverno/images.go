package kyverno

import (
	"strings"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/ir"
)

// withImages gives pol Kyverno's images variable when its CEL reads it: a
// policy variable for the validations and mutations, and the expression
// itself in match conditions, which cannot read variables.
func withImages(pol *ir.Policy) {
	uses := false
	for i := range pol.MatchConditions {
		if e := pol.MatchConditions[i].Expression; conditions.UsesImages(e) {
			pol.MatchConditions[i].Expression = strings.ReplaceAll(e, conditions.ImagesReference, "("+conditions.ImagesExpression()+")")
		}
	}
	for _, v := range pol.Variables {
		uses = uses || conditions.UsesImages(v.Expression)
	}
	for _, v := range pol.Validations {
		uses = uses || conditions.UsesImages(v.Expression) || conditions.UsesImages(v.MessageExpression)
	}
	for _, a := range pol.AuditAnnotations {
		uses = uses || conditions.UsesImages(a.ValueExpression)
	}
	for _, m := range pol.Mutations {
		uses = uses || conditions.UsesImages(m.Expression)
	}
	if !uses {
		return
	}
	o := pol.Origin
	o.Path += " (generated: Kyverno's images variable)"
	images := ir.NamedExpression{Name: conditions.ImagesVariable, Expression: conditions.ImagesExpression(), Origin: o}
	pol.Variables = append([]ir.NamedExpression{images}, pol.Variables...)
}
