package typed

import (
	"testing"

	kyvernov1 "github.com/kyverno/kyverno/api/kyverno/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/admitc/admitc/compiler/kyverno/conditions"
	"github.com/admitc/admitc/internal/celbuild"
)

// conditionsOf translates an any/all block over a Pod with the context
// variables vars.
func conditionsOf(t *testing.T, block string, vars ...conditions.Variable) (string, error) {
	t.Helper()
	var raw kyvernov1.AnyAllConditions
	require.NoError(t, yaml.Unmarshal([]byte(block), &raw))
	b := celbuild.New()
	tr := NewTranslator(b)
	if err := tr.SetContext(vars); err != nil {
		return "", err
	}
	out, err := tr.Conditions(raw, Roots{Object: b.Ident("object"), ContextObject: b.Ident("object"), Node: podSchema(t), Operation: b.Select(b.Ident("request"), "operation")})
	if err != nil {
		return "", err
	}
	return b.MustPrint(out.Holds), nil
}

// Context variables, JMESPath filters with comparators, pipes and the
// functions of the typed subset read as a person writes them.
func TestConditionsReadAsWritten(t *testing.T) {
	approver := conditions.Variable{Name: "approver", JMESPath: `request.object.metadata.annotations."example.com/approver"`, Default: "", HasDefault: true}
	elevated := conditions.Variable{Name: "elevated", JMESPath: "request.object.spec.containers[?securityContext.privileged == `true`] | length(@)"}
	teams := conditions.Variable{Name: "teams", Value: []any{"payments", "search"}, HasValue: true}
	names := conditions.Variable{Name: "names", Value: "{{ request.object.spec.containers[].name }}", HasValue: true, JMESPath: "length(@)"}
	for _, c := range []struct {
		block string
		vars  []conditions.Variable
		want  string
	}{{
		block: `{all: [{key: "{{ elevated }}", operator: GreaterThan, value: 0}, {key: "{{ regex_match('^TEAM-[0-9]+$', approver) }}", operator: Equals, value: false}]}`,
		vars:  []conditions.Variable{approver, elevated},
		want:  `object.spec.containers.exists(container, container.?securityContext.?privileged.orValue(false)) && !object.metadata.?annotations[?"example.com/approver"].orValue("").matches("^TEAM-[0-9]+$")`,
	}, {
		block: `{any: [{key: "{{ request.object.metadata.annotations.team }}", operator: AnyNotIn, value: "{{ teams }}"}]}`,
		vars:  []conditions.Variable{teams},
		// A key may be a wildcard pattern too (Kyverno matches it against
		// each value), unless it cannot hold one.
		want: `!(object.metadata.annotations.team in ["payments", "search"] || object.metadata.annotations.team.matches("^[*?acehmnprsty]*$") && ["payments", "search"].exists(v, v.matches("(?s)^" + object.metadata.annotations.team.replace("*", ".*").replace("?", ".") + "$")))`,
	}, {
		// A label's value cannot: the API server keeps it to letters,
		// digits, '-', '_' and '.'.
		block: `{any: [{key: "{{ request.object.metadata.labels.team }}", operator: AnyNotIn, value: "{{ teams }}"}]}`,
		vars:  []conditions.Variable{teams},
		want:  `!(object.metadata.labels.team in ["payments", "search"])`,
	}, {
		// to_upper is Unicode's, upperAscii ASCII's: alike on a label.
		block: `{any: [{key: "{{ regex_match('^TEAM-[0-9]+$', to_upper(request.object.metadata.labels.team || '')) }}", operator: Equals, value: false}]}`,
		want:  `!object.metadata.?labels.?team.orValue("").upperAscii().matches("^TEAM-[0-9]+$")`,
	}, {
		block: `{any: [{key: "{{ to_lower(request.object.metadata.annotations.team || '') }}", operator: Equals, value: "x"}]}`,
		want:  ``,
	}, {
		block: `{any: [{key: "{{ names }}", operator: GreaterThan, value: 4}]}`,
		vars:  []conditions.Variable{names},
		want:  `object.spec.containers.size() > 4`,
	}, {
		block: "{any: [{key: \"{{ request.object.spec.containers[?securityContext.runAsUser < `1000` && securityContext.capabilities.add != null] | length(@) }}\", operator: Equals, value: 0}]}",
		want:  `!object.spec.containers.exists(container, container.?securityContext.?runAsUser.hasValue() && container.securityContext.runAsUser < 1000 && container.securityContext.?capabilities.?add.hasValue())`,
	}, {
		block: `{all: [{key: "{{ to_string(request.object.spec.automountServiceAccountToken) }}", operator: Equals, value: "null"}]}`,
		want:  `!has(object.spec.automountServiceAccountToken) || string(object.spec.automountServiceAccountToken) == "null"`,
	}, {
		block: "{all: [{key: \"{{ request.object.spec.initContainers || `[]` | length(@) }}\", operator: Equals, value: 0}]}",
		want:  `object.spec.?initContainers.orValue([]).size() == 0`,
	}, {
		// An object read with || '' is '' where it is missing or has no
		// field, and never equals '' otherwise.
		block: `{any: [{key: "{{ request.object.spec.affinity.podAntiAffinity || '' }}", operator: Equals, value: ""}]}`,
		want:  `!object.spec.?affinity.?podAntiAffinity.hasValue() || !has(object.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) && !has(object.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution)`,
	}, {
		block: "{any: [{key: \"{{ request.object.spec.nodeSelector || `{}` }}\", operator: NotEquals, value: \"\"}]}",
		want:  `true`,
	}, {
		// A quantity compares as one (Kyverno: durations first, then
		// quantities).
		block: `{all: [{key: "{{ request.object.spec.overhead.memory || '' }}", operator: GreaterThan, value: 1Gi}]}`,
		want:  `isQuantity(object.spec.?overhead.?memory.orValue("")) && quantity(object.spec.?overhead.?memory.orValue("")).isGreaterThan(quantity("1Gi"))`,
	}, {
		block: `{all: [{key: "{{ request.object.spec.overhead.memory || '' }}", operator: LessThan, value: 1m}]}`,
		want:  ``,
	}, {
		block: `{all: [{key: "{{ length(keys(request.object.spec.nodeSelector || ` + "`{}`" + `)) }}", operator: Equals, value: 0}]}`,
		want:  ``,
	}, {
		// Two quantity fields compare as quantities; a missing one is
		// its default, which Kyverno finds unequal to every quantity.
		block: `{all: [{key: "{{ request.object.spec.overhead.memory || '' }}", operator: NotEquals, value: "{{ request.object.spec.overhead.cpu || '' }}"}]}`,
		want:  `object.spec.?overhead.?memory.hasValue() ? (!object.spec.?overhead.?cpu.hasValue() || quantity(object.spec.overhead.memory) != quantity(object.spec.overhead.cpu)) : object.spec.?overhead.?cpu.hasValue()`,
	}, {
		block: `{all: [{key: "{{ request.object.spec.overhead.memory }}", operator: GreaterThanOrEquals, value: "{{ request.object.spec.overhead.cpu }}"}]}`,
		want:  `quantity(object.spec.overhead.memory).compareTo(quantity(object.spec.overhead.cpu)) >= 0`,
	}, {
		// Two names are compared as Kyverno compares any text (durations,
		// quantities, wildcards): not typed.
		block: `{all: [{key: "{{ request.object.metadata.name }}", operator: Equals, value: "{{ request.object.metadata.namespace }}"}]}`,
		want:  ``,
	}} {
		got, err := conditionsOf(t, c.block, c.vars...)
		if c.want == "" {
			assert.ErrorIs(t, err, ErrNotTyped, c.block)
			continue
		}
		require.NoError(t, err, c.block)
		assert.Equal(t, c.want, got, c.block)
	}
}

// A context entry that may fail to load (evaluate to null without a
// default, read a value that may be missing) keeps the exact form: Kyverno
// fails every query that names it, even one that does not read it.
func TestContextEntriesThatMayFailAreRefused(t *testing.T) {
	owner := conditions.Variable{Name: "owner", JMESPath: "request.object.metadata.annotations.owner"}
	for _, block := range []string{
		`{any: [{key: "{{ owner }}", operator: Equals, value: x}]}`,
		`{any: [{key: "{{ contains(request.object.metadata.name, 'owner') }}", operator: Equals, value: true}]}`,
	} {
		_, err := conditionsOf(t, block, owner)
		assert.ErrorIs(t, err, ErrNotTyped, block)
	}
	_, err := conditionsOf(t, `{any: [{key: "{{ request.object.metadata.name }}", operator: Equals, value: x}]}`, owner)
	assert.NoError(t, err, "an entry no query names is never loaded")
	b := celbuild.New()
	assert.ErrorIs(t, NewTranslator(b).SetContext([]conditions.Variable{{Name: "request", Value: "x", HasValue: true}}), ErrNotTyped)
	assert.ErrorIs(t, NewTranslator(b).SetContext([]conditions.Variable{{Name: "cm", CEL: "params.data"}}), ErrNotTyped)
	_, err = conditionsOf(t, `{any: [{key: "{{ regex_match('(', request.object.metadata.name) }}", operator: Equals, value: true}]}`)
	assert.ErrorIs(t, err, ErrNotTyped, "an invalid pattern")

	// On DELETE, Kyverno's substitutions read the old object as
	// request.object, an entry's own query reads null.
	var raw kyvernov1.AnyAllConditions
	require.NoError(t, yaml.Unmarshal([]byte(`{any: [{key: "{{ owner }}", operator: Equals, value: x}]}`), &raw))
	b = celbuild.New()
	tr := NewTranslator(b)
	require.NoError(t, tr.SetContext([]conditions.Variable{{Name: "owner", JMESPath: "request.object.metadata.name", Default: "", HasDefault: true}}))
	_, err = tr.Conditions(raw, Roots{Object: b.Select(b.Ident("variables"), "resource"), Node: podSchema(t)})
	assert.ErrorIs(t, err, ErrNotTyped, "request.object in an entry's query of a policy that matches DELETE")
}
