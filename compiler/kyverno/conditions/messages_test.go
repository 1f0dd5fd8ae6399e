package conditions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func decodeConditions(t *testing.T, y string) (raw any) {
	t.Helper()
	require.NoError(t, yaml.Unmarshal([]byte(y), &raw))
	return raw
}

// The messages a holding block returns, as Kyverno's
// evaluateAnyAllConditionsWithContext joins them.
func TestHeldMessages(t *testing.T) {
	for _, tc := range []struct {
		name, conds string
		want        []string
	}{
		{"no messages", `{any: [{key: a, operator: Equals, value: a}]}`, []string{""}},
		{"any messages differ: one per any condition", `
any:
- {key: a, operator: Equals, value: a, message: first}
- {key: a, operator: Equals, value: a}
- {key: a, operator: Equals, value: a, message: third}
all:
- {key: a, operator: Equals, value: a, message: all0}
- {key: a, operator: Equals, value: a, message: ""}
- {key: a, operator: Equals, value: a, message: all2}`, []string{"first; all0; all2", "all0; all2", "third; all0; all2"}},
		{"any messages alike: one", `
any:
- {key: a, operator: Equals, value: a, message: same}
- {key: a, operator: Equals, value: a, message: same}`, []string{"same"}},
		{"all only", `{all: [{key: a, operator: Equals, value: a, message: x}, {key: a, operator: Equals, value: a, message: "y"}]}`, []string{"x; y"}},
		{"the list form joins with a bare semicolon", `[{key: a, operator: Equals, value: a, message: x}, {key: a, operator: Equals, value: a, message: "y"}]`, []string{"x;y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := decodeConditions(t, tc.conds)
			c, err := Decode(raw)
			require.NoError(t, err)
			assert.Equal(t, tc.want, HeldMessages(c, IsList(raw)))
		})
	}
}

// FirstHolding picks the message of the first any condition that holds,
// evaluated in admitc's CEL environment.
func TestFirstHoldingChoosesTheMessage(t *testing.T) {
	raw := decodeConditions(t, `
any:
- {key: "{{ request.object.spec.type }}", operator: Equals, value: NodePort, message: node}
- {key: "{{ request.object.spec.type }}", operator: Equals, value: LoadBalancer, message: lb}
- {key: "{{ request.object.spec.type }}", operator: AnyIn, value: [NodePort, LoadBalancer], message: either}`)
	c, err := Decode(raw)
	require.NoError(t, err)
	fresh := 0
	first, err := FirstHolding(c, Scope{}, &fresh)
	require.NoError(t, err)
	msgs := HeldMessages(c, false)
	require.Len(t, msgs, 3)
	for typ, want := range map[string]string{"NodePort": "node", "LoadBalancer": "lb"} {
		out, err := evalCEL(t, Choose(first, msgs), "spec: {type: "+typ+"}", "CREATE")
		require.NoError(t, err)
		assert.Equal(t, want, out, typ)
	}
}

// StringField raises where Kyverno's SubstituteAllInRule fails on a
// string field: a variable that does not resolve, or a whole-variable
// field whose value is not a string or null.
func TestStringField(t *testing.T) {
	fresh := 0
	static, err := StringField("no variables", Scope{}, &fresh)
	require.NoError(t, err)
	assert.Equal(t, "true", static)
	for _, tc := range []struct {
		field, object string
		raises        bool
	}{
		{"owned by {{ request.object.metadata.annotations.owner }}", "metadata: {annotations: {owner: ana}}", false},
		{"owned by {{ request.object.metadata.annotations.owner }}", "metadata: {name: x}", true},
		{"{{ request.object.spec.replicas }}", "spec: {replicas: 3}", true},
		{"{{ request.object.spec.replicas }}", "spec: {replicas: null}", false},
		{"{{ request.object.metadata.name }}", "metadata: {name: x}", false},
		{"replicas {{ request.object.spec.replicas }}", "spec: {replicas: 3}", false},
	} {
		e, err := StringField(tc.field, Scope{}, &fresh)
		require.NoError(t, err)
		_, err = evalCEL(t, e, tc.object, "CREATE")
		assert.Equal(t, tc.raises, err != nil, "%s on %s: %v", tc.field, tc.object, err)
	}
}

func TestJoinNonEmpty(t *testing.T) {
	assert.Equal(t, "a; b", JoinNonEmpty([]string{"", "a", "", "b"}, "; "))
	assert.Equal(t, "", JoinNonEmpty([]string{"", ""}, "; "))
}
