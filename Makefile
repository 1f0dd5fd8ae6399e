# admitc's build and test entry points. `make test` is what CI runs.
GO        ?= go
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can report a bare
# "context deadline exceeded" failure when the deadline races a busy worker (golang/go#75804,
# fixed in Go 1.27). A count has no deadline to race.
FUZZTIME  ?= 2000x
BENCHTIME ?= 1s
VERSION   ?= v0.1.0
LDFLAGS   := -s -w -X github.com/admitc/admitc/internal/version.Version=$(VERSION)
GOARCH    ?= $(shell $(GO) env GOARCH)

# Every build and test is -trimpath, as the image build (and TestImage) is:
# one set of compiled packages in the build cache instead of two, which on a
# cold machine saves a whole second compile of admitc's dependency tree.
export GOFLAGS += -trimpath

.PHONY: all build build-serve build-kyverno image test unit fuzz kyverno kyverno-full fastpath-full kyverno-cli golden bench twins load overload soak audit-load apiserver-cost e2e clean

all: build

## build: admitc without the Kyverno engine (compile, test, cel, serve, certs, compare with two engines).
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/admitc ./cmd/admitc

## image: the OCI image ghcr.io/admitc/admitc:$(VERSION), built without a Docker daemon: a static
## binary on an empty base, user 65532, no shell. Writes bin/image (OCI layout) and bin/admitc-image.tar
## (docker load -i bin/admitc-image.tar; crane push bin/admitc-image.tar REF).
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/linux-$(GOARCH)/admitc ./cmd/admitc
	$(GO) run ./cmd/admitc-image --binary bin/linux-$(GOARCH)/admitc --version $(VERSION) --arch $(GOARCH) --oci-layout bin/image --tarball bin/admitc-image.tar

## build-kyverno: admitc with the Kyverno engine in compare (a much larger binary).
build-kyverno:
	$(GO) build -tags kyverno -o bin/admitc-kyverno ./cmd/admitc

## kyverno: the tests against Kyverno's own engine (compare's column, the pattern translation's differential test, the whole-rule differential test on every ClusterPolicy fixture and its variants, the ValidatingPolicy differential against Kyverno's vpol engine) (~20 minutes to build cold on 2 cores).
## In `make test` the differentials decide DIFF_VARIANTS (default 15) generated variants of every fixture
## resource; `make kyverno-full` decides 60 (the tests' own default), as before a release.
DIFF_VARIANTS ?= 15
kyverno:
	$(GO) test -tags kyverno ./internal/compare ./internal/cli -run 'Kyverno|Compare'
	$(GO) test -tags kyverno ./compiler/kyverno/pattern/ ./compiler/kyverno/conditions/
	DIFF_VARIANTS=$(DIFF_VARIANTS) $(GO) test -tags kyverno -timeout 30m ./internal/verify -run 'WholeRule|Mutate|DenyMessages|ValidatingPolicies'

## kyverno-full: the Kyverno differentials on 60 variants per fixture resource (~3x make kyverno's sample).
kyverno-full:
	$(MAKE) kyverno DIFF_VARIANTS=60

## fastpath-full: the fast path against the reference path on 50 variants of every fixture object (make test runs 15), and the
## typed translations against their dynamic forms on 40 (make test runs 6).
fastpath-full:
	FASTPATH_VARIANTS=50 TYPED_VARIANTS=40 $(GO) test -count=1 -timeout 30m ./runtime -run '^Test(FastPathDecidesAsReference|TypedDecidesAsDynamic)$$' -v

## kyverno-cli: the Kyverno CLI (`kyverno test`, v1.19.1 built from the module cache into
## test/kyverno-cli/.bin/) on every Kyverno fixture directory, as an oracle for their expectations,
## beside `admitc verify` (per-directory counts and verdicts compared). Not part of `make test`: the
## CLI's build (~5 minutes warm, a 400 MB binary) is beyond CI's budget. See test/kyverno-cli/run.sh.
kyverno-cli:
	test/kyverno-cli/run.sh

## test: every test: unit and golden tests, short fuzz runs, the Kyverno engine tests and the e2e suite.
test: unit fuzz kyverno e2e

## unit: unit, CLI and golden tests (race detector off: the upstream CEL code is slow under it).
unit:
	$(GO) vet ./...
	$(GO) test -timeout 30m ./...

## fuzz: a short bounded run of every fuzz target.
fuzz:
	$(GO) test ./compiler -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./runtime -run '^$$' -fuzz '^FuzzDecodeManifests$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./runtime -run '^$$' -fuzz '^FuzzDiff$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./runtime -run '^$$' -fuzz '^FuzzFastPath$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
	$(GO) test ./runtime/server -run '^$$' -fuzz '^FuzzReview$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s

## e2e: the suite against a real kube-apiserver and etcd on loopback (built once per machine, ~15 min cold).
## The verbose log is kept in test/e2e/.bin/e2e.log; on a failure its failing tests and assertions
## are printed again at the end, where a CI log's tail shows them.
e2e:
	test/e2e/build-binaries.sh
	cd test/e2e && { $(GO) test -tags e2e -count=1 -timeout 30m -v . 2>&1; echo $$? > .bin/e2e.status; } | tee .bin/e2e.log; \
	status=$$(cat .bin/e2e.status); if [ "$$status" != 0 ]; then echo '== e2e: what failed (whole log: test/e2e/.bin/e2e.log) =='; \
	grep -E -- '--- FAIL|^panic:|[[:space:]](Error|Messages):|timed out' .bin/e2e.log | head -80; fi; exit $$status

## golden: regenerate the golden files after a deliberate output change.
golden:
	$(GO) test ./golden -update

## bench: one decision for a typical pod by admitc's fast path, its reference path, the API server's
## plugins in-process and the Kyverno engine, on the example set and the ~50-policy PSS set, as one
## table with ratios (kyverno build); then the compile and runtime micro-benchmarks.
bench:
	@mkdir -p bin
	$(GO) test -tags kyverno ./internal/compare -run '^$$' -bench '^BenchmarkDecision$$' -benchmem -benchtime $(BENCHTIME) > bin/bench-decision.txt
	$(GO) run ./test/bench < bin/bench-decision.txt
	$(GO) test ./internal/generate ./runtime -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME)

## twins: admitc's translation of every Kyverno pattern fixture (examples/kyverno-pattern) against its
## hand-written CEL twin (examples/twins), per fixture and in total: CEL characters in the emitted VAPs,
## decision time of the fast path over the fixture's resources (as the test holds them, and as the API server
## sends them: defaulted), and the original's compile time, with
## issue 31's goals (size <= 2x in total and <= 4x per fixture, time <= 1.5x). Not part of `make test`
## (a few minutes on 2 cores); TWINS_FLAGS='-run seccomp -sort name' narrows or reorders it.
twins:
	$(GO) run ./test/twins $(TWINS_FLAGS)

## apiserver-cost: admitc's translation of every Kyverno pattern fixture and the hand-written twins, each set applied in
## turn to a kube-apiserver v1.37.2 on loopback: time until the API server enforces the set, and the p50/p90 a dry-run
## pod create takes with it (and with no policy), with issue 31's goals (added latency <= 1.5x, enforce <= 2x the
## twins'). Not part of make test (a few minutes on 2 cores); APISERVER_COST_FLAGS='-run seccomp' narrows it.
apiserver-cost:
	test/apiserver-cost/run.sh $(APISERVER_COST_FLAGS)

## load: admitc serve (the serve-only build) beside a stdlib HTTPS echo baseline on loopback. MODE=ramp (default):
## the highest rate each sustains with p99 <= 10 ms and no error, p50/p99 at 1,000/s and 2,000/s, ratios to the
## baseline. MODE=fixed RATE=2000 DURATION=10s: one rate. MODE=overload RATE=10000: above capacity (see overload).
load:
	MODE=$${MODE:-ramp} RATE=$${RATE:-2000} DURATION=$${DURATION:-10s} test/load/run.sh

## overload: /validate at 5x capacity (10,000/s on 2 cores) for 120 s with the API server's ?timeout=2s: RSS, goroutines and
## goodput every 10 s, answers by status, p99 (the echo baseline first, for 20 s: BASELINE_DURATION).
overload:
	MODE=overload RATE=$${RATE:-10000} DURATION=$${DURATION:-120s} test/load/run.sh

## soak: 60 s at 500/s on the full and on the serve-only binary; fails on any non-2xx answer; size and RSS at rest and after.
soak:
	MODE=soak RATE=$${RATE:-500} test/load/run.sh

## audit-load: admitc audit on a kube-apiserver filled with 5,000 then 20,000 pods in 50 namespaces, with 40 Pod
## Security and best-practice Kyverno ClusterPolicies: objects/s and peak RSS at each stage, beside `kyverno apply
## --cluster --policy-report` on the same cluster when the Kyverno CLI is built (make kyverno-cli). Fails when admitc's
## peak RSS passes 256 MiB or grows more than 1.2x between the stages. Not part of make test (~5 minutes on 2 cores).
audit-load:
	test/audit-load/run.sh

## build-serve: the serve-only admitc (serve, certs, version): no compiler backends, compare engines or test runners.
build-serve:
	$(GO) build -tags serveonly -ldflags "$(LDFLAGS)" -o bin/admitc-serve ./cmd/admitc

clean:
	rm -rf bin
