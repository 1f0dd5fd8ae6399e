package compiler

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/admitc/admitc/compiler/gatekeeper"
	"github.com/admitc/admitc/ir"
)

// gkTemplate is a ConstraintTemplate whose source block is src (indented
// eight spaces, under spec.targets[0].code[0].source).
func gkTemplate(src string) string {
	return `apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata:
  name: k8srequiredlabels
spec:
  crd:
    spec:
      names:
        kind: K8sRequiredLabels
  targets:
  - target: admission.k8s.gatekeeper.sh
    code:
    - engine: K8sNativeValidation
      source:
` + src
}

const gkConstraint = `apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata:
  name: must-have-owner
spec:
  enforcementAction: warn
  match:
    kinds:
    - apiGroups: [""]
      kinds: ["Pod", "Namespace"]
    - kinds: ["Ingress"]
    labelSelector:
      matchLabels: {team: pay}
    excludedNamespaces: ["kube-*"]
  parameters:
    labels: ["owner"]
`

const gkValidation = `        validations:
        - expression: variables.params.labels.all(l, l in variables.anyObject.metadata.labels)
          message: missing labels
`

func compileGK(t *testing.T, files ...Source) (*ir.PolicySet, string) {
	t.Helper()
	set, diags := Compile(files, Options{})
	if len(diags) > 0 {
		return nil, diags.Error()
	}
	return set, ""
}

func TestGatekeeperLowering(t *testing.T) {
	set, errs := compileGK(t, Source{Name: "template.yaml", Data: []byte(gkTemplate(gkValidation))}, Source{Name: "constraint.yaml", Data: []byte(gkConstraint)})
	require.Empty(t, errs)
	require.Len(t, set.Policies, 1)
	p := set.Policies[0]
	assert.Equal(t, gatekeeper.Type, p.Type)
	assert.Equal(t, ir.Fail, p.FailurePolicy)
	assert.Equal(t, &ir.ParamKind{APIVersion: "constraints.gatekeeper.sh/v1beta1", Kind: "K8sRequiredLabels"}, p.ParamKind)
	require.Len(t, p.Variables, 2)
	assert.Equal(t, "anyObject", p.Variables[0].Name)
	assert.Equal(t, "params", p.Variables[1].Name)
	assert.Contains(t, p.Variables[1].Expression, "params.spec.parameters")
	assert.Equal(t, []ir.ResourceRule{
		{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"pods", "namespaces"}, Operations: []ir.Operation{ir.Create, ir.Update}, Scope: "*"},
		{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"ingresses"}, Operations: []ir.Operation{ir.Create, ir.Update}, Scope: "*"},
	}, p.MatchConstraints.ResourceRules)
	require.Len(t, p.Bindings, 1)
	b := p.Bindings[0]
	assert.Equal(t, "must-have-owner", b.Name)
	assert.Equal(t, []ir.Action{ir.Warn}, b.Actions)
	assert.Equal(t, &ir.ParamRef{Name: "must-have-owner", ParameterNotFoundAction: ir.ParamAllow}, b.ParamRef)
	assert.Equal(t, map[string]string{"team": "pay"}, b.MatchResources.ObjectSelector.MatchLabels)
	require.Len(t, b.Params, 1)
	assert.Equal(t, "must-have-owner", b.Params[0]["metadata"].(map[string]any)["name"])
}

func TestGatekeeperDiagnostics(t *testing.T) {
	cases := map[string]struct {
		template, constraint string
		want                 string
	}{
		"cel error in a template validation": {
			template: gkTemplate(`        validations:
        - expression: variables.params.labels.all(l, l in objct.metadata.labels)
`),
			constraint: gkConstraint,
			want:       "template.yaml:16:59: spec.targets[0].code[0].source.validations[0].expression: undeclared reference to 'objct'",
		},
		"cel error in a block scalar variable": {
			template: gkTemplate(`        variables:
        - name: labels
          expression: |
            has(variables.anyObject.metadata.labels) ?
              objct.metadata.labels : {}
` + gkValidation),
			constraint: gkConstraint,
			want:       "template.yaml:19:15: spec.targets[0].code[0].source.variables[0].expression: undeclared reference to 'objct'",
		},
		"reserved variable name": {
			template: gkTemplate(`        variables:
        - name: params
          expression: "1"
` + gkValidation),
			constraint: gkConstraint,
			want:       `template.yaml:16:17: spec.targets[0].code[0].source.variables[0].name: variable name "params" is reserved by Gatekeeper (params, anyObject and gatekeeper_internal_*)`,
		},
		"unknown field in the source": {
			template:   gkTemplate("        matchConditions: []\n" + gkValidation),
			constraint: gkConstraint,
			want:       `template.yaml:15:9: spec.targets[0].code[0].source.matchConditions: unknown field "matchConditions" in spec.targets[0].code[0].source of a K8sNativeValidation source`,
		},
		"rego only": {
			template: strings.Replace(gkTemplate(""), "    code:\n    - engine: K8sNativeValidation\n      source:\n", "    rego: |\n      package x\n", 1),
			want:     "template.yaml:11:5: spec.targets[0]: Rego is not translated: this template has Rego and no K8sNativeValidation code; admitc runs only Gatekeeper's CEL engine",
		},
		"constraint without its template": {
			template:   gkTemplate(gkValidation),
			constraint: strings.Replace(gkConstraint, "kind: K8sRequiredLabels", "kind: K8sRequiredLabel", 1),
			want:       `constraint.yaml:1:1: constraint "must-have-owner" is of kind K8sRequiredLabel, but no ConstraintTemplate in the policy files defines that kind (crd.spec.names.kind); pass the template's file too`,
		},
		"unknown enforcement action": {
			template:   gkTemplate(gkValidation),
			constraint: strings.Replace(gkConstraint, "enforcementAction: warn", "enforcementAction: block", 1),
			want:       `constraint.yaml:6:22: spec.enforcementAction: enforcementAction must be deny, warn, dryrun or scoped (lowercase: Gatekeeper's webhook refuses any other value), got "block"`,
		},
		"scoped action for audit only": {
			template:   gkTemplate(gkValidation),
			constraint: strings.Replace(gkConstraint, "enforcementAction: warn", "enforcementAction: scoped\n  scopedEnforcementActions:\n  - action: deny\n    enforcementPoints: [{name: audit.gatekeeper.sh}]", 1),
			want:       `constraint.yaml:8:3: spec.scopedEnforcementActions: no scoped enforcement action applies at admission (enforcement point validation.gatekeeper.sh or "*"); admitc cannot say what this constraint does there`,
		},
		"template name is not the kind": {
			template: strings.Replace(gkTemplate(gkValidation), "name: k8srequiredlabels", "name: required-labels", 1),
			want:     `template.yaml:4:9: metadata.name: template name "required-labels" must be the lower-case constraint kind "k8srequiredlabels" (Gatekeeper refuses it otherwise)`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := []Source{{Name: "template.yaml", Data: []byte(tc.template)}}
			if tc.constraint != "" {
				files = append(files, Source{Name: "constraint.yaml", Data: []byte(tc.constraint)})
			}
			_, errs := compileGK(t, files...)
			assert.Equal(t, tc.want, firstLine(errs))
		})
	}
}

func TestGatekeeperScopedActions(t *testing.T) {
	c := strings.Replace(gkConstraint, "enforcementAction: warn", "enforcementAction: scoped\n  scopedEnforcementActions:\n  - action: warn\n    enforcementPoints: [{name: validation.gatekeeper.sh}]\n  - action: deny\n    enforcementPoints: [{name: audit.gatekeeper.sh}]", 1)
	set, errs := compileGK(t, Source{Name: "template.yaml", Data: []byte(gkTemplate(gkValidation))}, Source{Name: "constraint.yaml", Data: []byte(c)})
	require.Empty(t, errs)
	assert.Equal(t, []ir.Action{ir.Warn}, set.Policies[0].Bindings[0].Actions)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestGatekeeperV1beta1AndRegoBesideCEL(t *testing.T) {
	tmpl := strings.Replace(gkTemplate(gkValidation), "templates.gatekeeper.sh/v1\n", "templates.gatekeeper.sh/v1beta1\n", 1)
	tmpl = strings.Replace(tmpl, "    code:\n", "    rego: |\n      package k8srequiredlabels\n    code:\n", 1)
	set, errs := compileGK(t, Source{Name: "template.yaml", Data: []byte(tmpl)}, Source{Name: "constraint.yaml", Data: []byte(gkConstraint)})
	require.Empty(t, errs)
	assert.Equal(t, "variables.params.labels.all(l, l in variables.anyObject.metadata.labels)", set.Policies[0].Validations[0].Expression)
}
