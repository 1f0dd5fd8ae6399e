//go:build kyverno

package conditions

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/kyverno/kyverno/pkg/config"
	"github.com/kyverno/kyverno/pkg/engine/jmespath"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/admitc/admitc/internal/celenv"
)

// functionQueries are the queries of the differential test: each function
// on the object's fields v, w (and a list l), which the seeded objects fill
// with values of every type or leave out. Queries marked unordered give a
// list in map order, compared as a multiset.
var functionQueries = []struct {
	query     string
	unordered bool
}{
	{"add(request.object.n, request.object.v)", false},
	{"subtract(request.object.v, request.object.n)", false},
	{"multiply(request.object.n, request.object.n)", false},
	{"divide(request.object.v, request.object.n)", false},
	{"divide(request.object.w, request.object.v)", false},
	{"modulo(request.object.n, request.object.v)", false},
	{"modulo(request.object.v, `3`)", false},
	{"request.object.k[].divide(@, `2`)", false},
	{"request.object.o[].add(b, `0.5`)", false},
	{"sum(request.object.k)", false},
	{"sum(request.object.l)", false},
	{"sum(request.object.v)", false},
	{"avg(request.object.k)", false},
	{"avg(request.object.v)", false},
	{"merge(request.object.v, request.object.m)", false},
	{"merge(request.object.m, request.object.v, `{\"z\": 2}`)", false},
	{"merge(request.object.v)", false},
	{"keys(merge(request.object.m, request.object.v))", true},
	{"request.object.l[1:]", false},
	{"request.object.l[:2]", false},
	{"request.object.l[::-1]", false},
	{"request.object.l[-2:]", false},
	{"request.object.l[-1:0:-2]", false},
	{"request.object.l[5:1:-1]", false},
	{"request.object.l[1:-1:2]", false},
	{"request.object.v[::3]", false},
	{"request.object.k[0:0]", false},
	{"request.object.l[::0]", false},
	{"request.object.o[1:].a", false},
	{"request.object.o[::-1].b", false},
	{"request.object.{first: l[0], rest: l[1:], count: length(k), name: v}", false},
	{"request.object.o[].{a: a, b: b}", false},
	{"request.object.o[?b > `1`].{value: a}", false},
	{"request.object.v.{inner: a}", false},
	{"length(request.object.{a: v, b: w})", false},
	{"keys(request.object.{x: l[:1], y: missing})", true},
	{"keys(request.object.v)", true},
	{"values(request.object.v)", true},
	{"length(keys(request.object.v))", false},
	{"contains(keys(request.object.v), 'a')", false},
	{"to_upper(request.object.v)", false},
	{"to_lower(request.object.v)", false},
	{"request.object.l[].to_upper(@)", false},
	{"regex_match(request.object.w, request.object.v)", false},
	{"regex_match('^[a-z0-9]+$', request.object.v)", false},
	{"regex_match('(', request.object.v)", false},
	{"request.object.l[?regex_match('^a', @)]", false},
	{"join(request.object.w, request.object.v)", false},
	{"join(', ', request.object.l)", false},
	{"split(request.object.v, request.object.w)", false},
	{"split(request.object.v, ',')", false},
	{"length(split(request.object.v, ''))", false},
	{"to_string(to_upper(request.object.v))", false},
	{"length(request.object.v)", false},
	{"starts_with(request.object.v, request.object.w)", false},
	{"contains(request.object.v, request.object.w)", false},
	{"to_array(request.object.v)", false},
	{"length(to_array(request.object.l))", false},
	{"not_null(request.object.v, request.object.w, 'none')", false},
	{"not_null(request.object.v)", false},
	{"type(request.object.v)", false},
	{"reverse(request.object.v)", false},
	{"reverse(request.object.l)", false},
	{"abs(request.object.v)", false},
	{"floor(request.object.v)", false},
	{"ceil(request.object.v)", false},
	{"max(request.object.v)", false},
	{"min(request.object.l)", false},
	{"max(request.object.l)", false},
	{"sort(request.object.v)", false},
	{"sort(request.object.l)", false},
	{"request.object.l[?type(@) == 'string'] | sort(@)", false},
	{"abs(request.object.n)", false},
	{"floor(request.object.n)", false},
	{"ceil(request.object.n)", false},
	{"max(request.object.k)", false},
	{"min(request.object.k)", false},
	{"sort(request.object.k)", false},
	{"reverse(request.object.k)", false},
	{"type(request.object.n)", false},
	{"equal_fold(request.object.v, request.object.w)", false},
	{"equal_fold(request.object.v, 'abc')", false},
	{"replace(request.object.v, request.object.w, '-', request.object.n)", false},
	{"replace(request.object.v, ',', '', `-1`)", false},
	{"replace_all(request.object.v, request.object.w, '_')", false},
	{"trim(request.object.v, request.object.w)", false},
	{"trim(request.object.v, 'a ')", false},
	{"trim_prefix(request.object.v, request.object.w)", false},
	{"to_boolean(request.object.v)", false},
	{"label_match(request.object.v, request.object.m)", false},
	{"pattern_match(request.object.w, request.object.v)", false},
	{"pattern_match('a*', request.object.v)", false},
	{"truncate(request.object.v, request.object.n)", false},
	{"truncate(request.object.v, `2`)", false},
	{"lookup(request.object.v, request.object.w)", false},
	{"lookup(request.object.k, request.object.n)", false},
	{"lookup(request.object.l, `1`)", false},
	{"items(request.object.v, 'key', 'value')", false},
	{"items(request.object.l, 'index', 'item')", false},
	{"items(request.object.v, 'k', 'k')", false},
	{"to_number(request.object.v)", false},
	{"to_number(request.object.n)", false},
	{"request.object.l[].to_number(@)", false},
	{"map(&length(@), request.object.l)", false},
	{"map(&a, request.object.l)", false},
	{"max_by(request.object.l, &a)", false},
	{"min_by(request.object.l, &length(@))", false},
	{"max_by(request.object.k, &@)", false},
	{"min_by(request.object.l, &@)", false},
	{"map(&a, request.object.o)", false},
	{"max_by(request.object.o, &a)", false},
	{"min_by(request.object.o, &a)", false},
	{"max_by(request.object.o, &to_string(b))", false},
}

// functionStrings are strings at the edges of the functions: non-ASCII
// letters whose case Unicode changes or not, separators, regexp syntax.
var functionStrings = []string{
	"", "a", "abc", "ABC", "Hello World", "a,b,,c", ",", ", ", "a, b", "straße", "ÄB", "ǅ", "İi", "中文", "é", "x\ty",
	"^a", "(", "[a-z]+", "a.c", "\\d+", "(?i)A", "$", "16777216", "3", "2.5", "web-1", "ab", "ba", "a b c",
	"true", "FALSE", "True", "tRuE", "*", "a*", "?b", "web-*", "  a  ", "aaa",
	"1e3", "-2.5", ".5", "5.", "+7", "1_000", "0x10", "1e400", "Inf", "nan", " 3", "3 ", "1e-5", "007",
}

// functionValue is a seeded JSON value: mostly strings, and numbers, null,
// booleans, lists and maps.
func functionValue(rng *rand.Rand, depth int) any {
	switch n := rng.Intn(20); {
	case n < 10:
		return functionStrings[rng.Intn(len(functionStrings))]
	case n < 11:
		return []any{0, 3, -7, 2.5, 16777216, 16777217, 1e20, 0.1, -0.5, -2.5, -1e20, -0.75}[rng.Intn(12)]
	case n == 11:
		return nil
	case n == 12:
		return rng.Intn(2) == 0
	case n < 16 && depth < 2:
		var l []any
		for i := rng.Intn(4); i > 0; i-- {
			if rng.Intn(4) == 0 {
				l = append(l, functionValue(rng, depth+1))
				continue
			}
			if rng.Intn(3) == 0 {
				l = append(l, []any{0, 3, -7, 2.5, -0.5, 1e20, -1e20, 0.1}[rng.Intn(8)])
				continue
			}
			l = append(l, functionStrings[rng.Intn(len(functionStrings))])
		}
		if l == nil {
			l = []any{}
		}
		return l
	case depth < 2:
		m := map[string]any{}
		for i := rng.Intn(4); i > 0; i-- {
			m[[]string{"a", "b", "c", "é"}[rng.Intn(4)]] = functionValue(rng, depth+1)
		}
		return m
	}
	return functionStrings[rng.Intn(len(functionStrings))]
}

// TestFunctionsAsKyverno evaluates each query of functionQueries through
// Kyverno's JMESPath (its default configuration's function table) and
// through admitc's CEL on seeded objects: equal results, or an error on
// both sides. The only other outcome allowed is admitc's own refusal at
// evaluation (a non-ASCII case change, a number Kyverno writes through
// float32), where admitc fails and Kyverno does not; those are counted.
func TestFunctionsAsKyverno(t *testing.T) {
	jp := jmespath.New(config.NewDefaultConfiguration(false))
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	rng := rand.New(rand.NewSource(11))
	counts := map[string]int{}
	equal, bothFail := map[string]int{}, map[string]int{}
	for _, q := range functionQueries {
		both := bothSides(t, jp, cc, q.query)
		for n := 0; n < 1000; n++ {
			obj := map[string]any{}
			for _, k := range []string{"v", "w", "l"} {
				if rng.Intn(12) > 0 {
					obj[k] = functionValue(rng, 0)
				}
			}
			// n a number, k a list of numbers (now and then one string).
			numbers := []any{0, 3, -7, 2.5, -0.5, -0.75, 0.1, -2.5, 1e20, -1e20, 12345.678, -3}
			if rng.Intn(10) > 0 {
				obj["n"] = numbers[rng.Intn(len(numbers))]
			}
			k := []any{}
			for i := rng.Intn(5); i > 0; i-- {
				if rng.Intn(20) == 0 {
					k = append(k, "a")
					continue
				}
				k = append(k, numbers[rng.Intn(len(numbers))])
			}
			obj["k"] = k
			// o a list of maps whose a is mostly a number, or mostly a
			// string (now and then missing, or of the other kind).
			var o []any
			strs := rng.Intn(2) == 0
			for i := rng.Intn(5); i > 0; i-- {
				e := map[string]any{"b": i}
				switch r := rng.Intn(10); {
				case r == 0:
				case r == 1 && strs, r > 1 && !strs:
					e["a"] = numbers[rng.Intn(len(numbers))]
				default:
					e["a"] = functionStrings[rng.Intn(len(functionStrings))]
				}
				o = append(o, e)
			}
			if o != nil {
				obj["o"] = o
			}
			// m a map like v's, sharing its keys now and then.
			if rng.Intn(4) > 0 {
				obj["m"] = functionValue(rng, 1)
				if v, ok := obj["v"].(map[string]any); ok && rng.Intn(2) == 0 {
					m := map[string]any{"z": "1"}
					for key, val := range v {
						m[key] = val
					}
					obj["m"] = m
				}
			}
			if rng.Intn(3) > 0 {
				obj["w"] = []any{",", "", "^a", "[a-z]+", "(", ", ", "ß", "a", "A", "ABC", "a*", "*c", "?", " ", "web-*"}[rng.Intn(15)]
			}
			data, err := json.Marshal(obj)
			require.NoError(t, err)
			want, wantErr, panicked, out, gotErr := both.eval(t, data)
			if panicked {
				// The fork's contains() compares list elements with ==,
				// which panics on two maps; merge() asserts a map.
				counts["Kyverno panics"]++
				continue
			}
			switch {
			case gotErr != nil && wantErr != nil:
				counts["both fail"]++
				bothFail[q.query]++
				continue
			case gotErr != nil && wantErr == nil && strings.Contains(gotErr.Error(), "admitc does not"):
				counts["admitc refuses at evaluation"]++
				continue
			}
			require.Equal(t, wantErr != nil, gotErr != nil, "%s on %s: Kyverno %v (%v), CEL %v (%v)", q.query, data, want, wantErr, out, gotErr)
			gotJSON := celJSON(t, out)
			wantJSON, err := json.Marshal(want)
			require.NoError(t, err)
			if q.unordered {
				gotJSON, wantJSON = sortedList(t, gotJSON), sortedList(t, wantJSON)
			}
			require.JSONEq(t, string(wantJSON), string(gotJSON), "%s on %s", q.query, data)
			counts["equal"]++
			equal[q.query]++
		}
	}
	for _, q := range functionQueries {
		t.Logf("%-50s %4d equal, %4d fail on both sides", q.query, equal[q.query], bothFail[q.query])
	}
	t.Logf("%d queries on 1,000 objects each: %v", len(functionQueries), counts)
	require.Greater(t, counts["equal"], 7000)
	require.Greater(t, counts["both fail"], 10000)
}

// sides is a query as Kyverno's JMESPath runs it and as its translation
// does, on the same JSON document (each side reads it as it reads JSON:
// Kyverno numbers as float64, CEL whole numbers as int64).
type sides struct {
	query   jmespath.Query
	program cel.Program
}

func bothSides(t *testing.T, jp jmespath.Interface, cc *celenv.Compiler, q string) sides {
	t.Helper()
	fresh := 0
	expr, err := Query(q, Scope{}, &fresh)
	require.NoError(t, err, q)
	res := cc.CompileCELExpression(boolExpr("dyn("+expr+")"), plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
	require.Nil(t, res.Error, "%s: %s", q, expr)
	query, err := jp.Query(q)
	require.NoError(t, err)
	return sides{query: query, program: res.Program}
}

// eval runs both sides on the object obj (request.object), given as JSON.
func (b sides) eval(t *testing.T, data []byte) (want any, wantErr error, panicked bool, got ref.Val, gotErr error) {
	t.Helper()
	var kyvernoObj, celObj map[string]any
	require.NoError(t, json.Unmarshal(data, &kyvernoObj))
	require.NoError(t, json.Unmarshal(data, &celObj))
	want, wantErr, panicked = search(b.query, map[string]any{"request": map[string]any{"object": kyvernoObj}})
	if panicked {
		return
	}
	got, _, gotErr = b.program.Eval(map[string]any{"object": intsAsInt64(celObj), "oldObject": nil, "request": map[string]any{"operation": "CREATE"}})
	if gotErr == nil && types.IsError(got) {
		gotErr = fmt.Errorf("%v", got)
	}
	return
}

// search runs a Kyverno query, reporting a panic.
func search(q jmespath.Query, data any) (v any, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	v, err = q.Search(data)
	return v, err, false
}

// celJSON is the JSON text of a CEL value.
func celJSON(t *testing.T, out any) []byte {
	v := out.(interface {
		ConvertToNative(reflect.Type) (any, error)
	})
	pb, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	require.NoError(t, err)
	data, err := protojson.Marshal(pb.(*structpb.Value))
	require.NoError(t, err)
	return data
}

// sortedList sorts a JSON list by its elements' JSON text (a non-list is
// left alone).
func sortedList(t *testing.T, data []byte) []byte {
	var l []json.RawMessage
	if json.Unmarshal(data, &l) != nil {
		return data
	}
	var texts []string
	for _, e := range l {
		var v any
		require.NoError(t, json.Unmarshal(e, &v))
		b, err := json.Marshal(v)
		require.NoError(t, err)
		texts = append(texts, string(b))
	}
	sort.Strings(texts)
	return []byte("[" + strings.Join(texts, ",") + "]")
}

// Every slice whose bounds are -7, -2, -1, 0, 1, 3, 7 or omitted and whose
// step is ±1, ±2, ±3 or omitted, on lists of 0 to 8 elements and on values
// that are no list, as Kyverno's JMESPath computes it.
func TestSlicesAsKyverno(t *testing.T) {
	jp := jmespath.New(config.NewDefaultConfiguration(false))
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	bounds := []string{"", "-7", "-2", "-1", "0", "1", "3", "7"}
	var inputs []any
	for n := 0; n <= 8; n++ {
		l := []any{}
		for i := 0; i < n; i++ {
			l = append(l, fmt.Sprint("e", i))
		}
		inputs = append(inputs, l)
	}
	inputs = append(inputs, nil, "abcdef", map[string]any{"a": "b"}, 3.0)
	compared := 0
	for _, start := range bounds {
		for _, stop := range bounds {
			for _, step := range []string{"", "-3", "-2", "-1", "1", "2", "3"} {
				q := "request.object.l[" + start + ":" + stop + ":" + step + "]"
				both := bothSides(t, jp, cc, q)
				for _, in := range inputs {
					data, err := json.Marshal(map[string]any{"l": in})
					require.NoError(t, err)
					want, wantErr, _, out, gotErr := both.eval(t, data)
					require.NoError(t, wantErr, q)
					require.NoError(t, gotErr, q)
					wantJSON, err := json.Marshal(want)
					require.NoError(t, err)
					require.JSONEq(t, string(wantJSON), string(celJSON(t, out)), "%s on %v", q, in)
					compared++
				}
			}
		}
	}
	t.Logf("%d slices of %d values: all equal", compared/len(inputs), len(inputs))
}

// Kyverno's arithmetic on every pair of operands from numbers (whole,
// fractions, negative, zero, large), quantity texts, duration texts, other
// texts and other types: the CEL gives Kyverno's value or fails with it,
// or raises admitc's error where Kyverno writes a quantity or a duration.
func TestArithmeticAsKyverno(t *testing.T) {
	jp := jmespath.New(config.NewDefaultConfiguration(false))
	cc := celenv.NewCompiler(celenv.RuntimeVersion())
	operands := []any{0, 1, 3, -7, 2.5, -0.5, 1e20, -9.5e18, 9007199254740993, 0.1,
		"1", "0", "1.5", "500m", "2Gi", "1e3", "-1", "1Ki", ".5", "Ki", "100M", "0.000001", "1E-3",
		"1h", "30s", "0s", "", "abc", "1 ", nil, true, []any{1}, map[string]any{"a": 1}}
	counts := map[string]int{}
	for _, fn := range []string{"add", "subtract", "multiply", "divide", "modulo"} {
		q := fn + "(request.object.x, request.object.y)"
		both := bothSides(t, jp, cc, q)
		for _, x := range operands {
			for _, y := range operands {
				data, err := json.Marshal(map[string]any{"x": x, "y": y})
				require.NoError(t, err)
				want, wantErr, panicked, out, gotErr := both.eval(t, data)
				require.False(t, panicked)
				switch {
				case gotErr != nil && wantErr != nil:
					counts["both fail"]++
					continue
				case gotErr != nil && wantErr == nil && strings.Contains(gotErr.Error(), "admitc does not"):
					counts["admitc refuses at evaluation"]++
					continue
				}
				require.Equal(t, wantErr != nil, gotErr != nil, "%s on %s: Kyverno %v (%v), CEL %v (%v)", q, data, want, wantErr, out, gotErr)
				wantJSON, err := json.Marshal(want)
				require.NoError(t, err)
				require.JSONEq(t, string(wantJSON), string(celJSON(t, out)), "%s on %s", q, data)
				counts["equal"]++
			}
		}
	}
	t.Logf("5 functions on %d x %d operands: %v", len(operands), len(operands), counts)
	require.Greater(t, counts["equal"], 500)
}
