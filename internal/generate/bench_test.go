package generate

import (
	"fmt"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/admitc/admitc/backends"
	"github.com/admitc/admitc/backends/webhook"
	"github.com/admitc/admitc/compiler"
	"github.com/admitc/admitc/internal/celenv"
)

// thousandPolicies is one file with 1,000 policies cycling through the
// built-in types and a CEL policy.
func thousandPolicies() []compiler.Source {
	bodies := []string{
		`type: required-labels, labels: [team]`,
		`type: allowed-registries, registries: [registry.k8s.io, docker.io/library]`,
		`type: image-digest, actions: [Warn, Audit]`,
		`type: disallow-privileged`,
		`type: run-as-non-root`,
		`type: memory-limit, actions: [Warn]`,
		`type: no-host-path, allowedPaths: [/var/log]`,
		`type: default-requests, requests: {cpu: 100m, memory: 128Mi}`,
		`type: add-labels, labels: {cloudcaptain.io/mutated-by: admitc}`,
		`type: cel, validations: [{expression: "object.spec.containers.all(c, has(c.image))", message: images}]`,
	}
	var b strings.Builder
	b.WriteString("policies:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "  - {name: p%04d, %s}\n", i, bodies[i%len(bodies)])
	}
	return []compiler.Source{{Name: "thousand.yaml", Data: []byte(b.String())}}
}

// thousandDistinctPolicies is 1,000 policies of the same types whose CEL
// all differs (each names its own label, registry, path or limit), so no
// compiled program is shared between them.
func thousandDistinctPolicies() []compiler.Source {
	bodies := []string{
		`type: required-labels, labels: [team-%d]`,
		`type: allowed-registries, registries: [registry%d.example.com, docker.io/library]`,
		`type: no-host-path, allowedPaths: [/var/log/%d]`,
		`type: default-requests, requests: {cpu: %dm, memory: 128Mi}`,
		`type: add-labels, labels: {example.com/policy-%d: admitc}`,
		`type: cel, validations: [{expression: "object.spec.containers.all(c, c.name != 'c%d')", message: names}]`,
	}
	var b strings.Builder
	b.WriteString("policies:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "  - {name: p%04d, "+bodies[i%len(bodies)]+"}\n", i, i+1)
	}
	return []compiler.Source{{Name: "distinct.yaml", Data: []byte(b.String())}}
}

// BenchmarkParse1000 is parsing alone: the YAML of 1,000 policies into nodes.
func BenchmarkParse1000(b *testing.B) {
	src := thousandPolicies()
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(src[0].Data, &n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile1000 compiles 1,000 policies to the IR (parse, lower and
// type-check every CEL expression with the API server's compiler).
func BenchmarkCompile1000(b *testing.B) {
	src := thousandPolicies()
	for b.Loop() {
		celenv.ForgetPrograms()
		if _, diags := compiler.Compile(src, compiler.Options{}); len(diags) > 0 {
			b.Fatal(diags)
		}
	}
}

// BenchmarkCompile1000AllBackends is the whole `admitc compile`: the IR and
// every backend's rendered YAML.
func BenchmarkCompile1000AllBackends(b *testing.B) {
	src := thousandPolicies()
	opts := backends.Options{Namespaces: []string{"shop"}, Webhook: webhook.Defaults}
	for b.Loop() {
		celenv.ForgetPrograms()
		if _, diags, err := Run(Request{Sources: src, Backends: []string{"all"}, Options: opts, WithIR: true}); err != nil || len(diags) > 0 {
			b.Fatal(err, diags)
		}
	}
}

// BenchmarkCompile1000Distinct is BenchmarkCompile1000AllBackends on 1,000
// policies that share no expression.
func BenchmarkCompile1000Distinct(b *testing.B) {
	src := thousandDistinctPolicies()
	opts := backends.Options{Namespaces: []string{"shop"}, Webhook: webhook.Defaults}
	for b.Loop() {
		celenv.ForgetPrograms()
		if _, diags, err := Run(Request{Sources: src, Backends: []string{"all"}, Options: opts, WithIR: true}); err != nil || len(diags) > 0 {
			b.Fatal(err, diags)
		}
	}
}
