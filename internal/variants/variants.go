package variants

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
)

// DefaultCount is how many variants Generate returns when Options.Count is 0.
const DefaultCount = 64

// Options say how many variants to make and what to aim at.
type Options struct {
	// Seed picks the variants; the same object, options and seed give the
	// same variants in the same order.
	Seed int64
	// Count is how many distinct variants to return (DefaultCount when 0);
	// fewer only when the object has too few distinct variants.
	Count int
	// Scalars are interesting values, such as a policy's literals: the
	// variants set values at and around them (see boundaries), at Paths
	// and in the object's scalars of the same type.
	Scalars []any
	// Paths are field paths written for a Pod (spec.containers[*].image,
	// metadata.labels["app.kubernetes.io/name"]), where the boundary
	// values are written even when the object has nothing there; for a pod
	// controller they also apply under its pod template.
	Paths []string
	// PodSecurity adds the pod breaks and container changes of every Pod
	// Security Standards check and version (podsecurity.go): capabilities,
	// sysctls of each version, seccomp and AppArmor types, volume kinds,
	// probe hosts, Windows pods. Off, the variants are those of earlier
	// runs.
	PodSecurity bool
}

// Variant is one variant of the object.
type Variant struct {
	// Name says what was changed, e.g. "remove spec.containers[0].image"
	// or "spec.hostNetwork=true + empty spec.volumes".
	Name string
	// Object is the changed copy (the input is never modified).
	Object map[string]any
}

// Generate returns opts.Count distinct variants of obj, each different
// from obj. It takes the single changes of every kind in turns (removed,
// null, other type, list, container, pod spec, boundary), each kind's
// changes in a seeded order, and then pairs of changes until it has
// enough. A path in opts.Paths that does not parse is an error.
func Generate(obj map[string]any, opts Options) ([]Variant, error) {
	count := opts.Count
	if count <= 0 {
		count = DefaultCount
	}
	var wanted []path
	for _, s := range opts.Paths {
		p, err := parsePath(s)
		if err != nil {
			return nil, fmt.Errorf("variants: path %q: %w", s, err)
		}
		wanted = append(wanted, p)
	}
	pool := pool(obj, wanted, boundaries(opts.Scalars), opts.PodSecurity)
	rng := rand.New(rand.NewSource(opts.Seed))
	p := picker{obj: obj, count: count, seen: map[string]bool{render(obj): true}, names: map[string]bool{}}
	p.takeSingles(rng, pool)
	p.takePairs(rng, pool)
	return p.out, nil
}

// pool is every single change, grouped by kind in a fixed order.
func pool(obj map[string]any, wanted []path, values []any, podSecurity bool) [][]mutation {
	var out [][]mutation
	all := append(append(append(genericMutations(obj), containerMutations(obj, containerBreaks)...), podSpecMutations(obj, podBreaks)...),
		boundaryMutations(obj, wanted, values)...)
	if podSecurity {
		all = append(append(all, containerMutations(obj, podSecurityContainerBreaks)...), podSpecMutations(obj, podSecurityPodBreaks)...)
	}
	for _, kind := range []string{kindRemove, kindNull, kindRetype, kindList, kindContainer, kindPodSpec, kindBoundary} {
		var group []mutation
		for _, m := range all {
			if m.kind == kind {
				group = append(group, m)
			}
		}
		if len(group) > 0 {
			out = append(out, group)
		}
	}
	return out
}

// picker collects distinct variants until it has count of them.
type picker struct {
	obj   map[string]any
	count int
	out   []Variant
	seen  map[string]bool
	names map[string]bool
}

func (p *picker) full() bool { return len(p.out) >= p.count }

// try applies the changes to a copy of the object and keeps the result if
// it is new and still an object.
func (p *picker) try(ms ...mutation) {
	var v any = deepCopy(p.obj)
	name := ""
	for i, m := range ms {
		v = m.apply(v)
		if i > 0 {
			name += " + "
		}
		name += m.name
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	key := render(obj)
	if p.seen[key] || p.names[name] {
		return
	}
	p.seen[key], p.names[name] = true, true
	p.out = append(p.out, Variant{Name: name, Object: obj})
}

// takeSingles takes one change of each kind in turn, each kind's changes
// shuffled by rng, until count or the pool is used up.
func (p *picker) takeSingles(rng *rand.Rand, pool [][]mutation) {
	queues := make([][]mutation, len(pool))
	for i, group := range pool {
		queues[i] = append([]mutation{}, group...)
		rng.Shuffle(len(queues[i]), func(a, b int) { queues[i][a], queues[i][b] = queues[i][b], queues[i][a] })
	}
	for left := true; left && !p.full(); {
		left = false
		for i := range queues {
			if len(queues[i]) == 0 || p.full() {
				continue
			}
			p.try(queues[i][0])
			queues[i], left = queues[i][1:], true
		}
	}
}

// takePairs combines two random changes of different kinds (or of the
// same kind when there is one) until count, giving up after a bounded
// number of attempts.
func (p *picker) takePairs(rng *rand.Rand, pool [][]mutation) {
	if len(pool) == 0 {
		return
	}
	for attempts := 0; !p.full() && attempts < 50*p.count; attempts++ {
		a, b := pool[rng.Intn(len(pool))], pool[rng.Intn(len(pool))]
		p.try(a[rng.Intn(len(a))], b[rng.Intn(len(b))])
	}
}

// render is v's JSON, with map keys sorted (a canonical form) and <, >
// and & as they are.
func render(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
