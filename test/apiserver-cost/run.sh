#!/usr/bin/env bash
# The emitted admission policies on a real kube-apiserver (make apiserver-cost):
#
#   test/apiserver-cost/run.sh [flags of test/apiserver-cost]
#
# 1. Builds kube-apiserver and etcd v1.37.2 once per machine
#    (test/e2e/build-binaries.sh).
# 2. Runs test/apiserver-cost: admitc's translation of every Kyverno pattern
#    fixture and the fixtures' hand-written CEL twins, each set applied in
#    turn to one API server on loopback: the time until the server enforces
#    the set, and the p50/p90 of a dry-run Pod create with the set in place,
#    beside the same request with no policy.
#
# Not part of make test: a few minutes on 2 cores.
# Every go command runs under the shared build lock (flock $BUILD_LOCK).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BUILD_LOCK=${BUILD_LOCK:-/tmp/admitc-build.lock}
locked() { flock "$BUILD_LOCK" "$@"; }
bin=$(test/e2e/build-binaries.sh)
mkdir -p bin
locked $GO build -o bin/apiserver-cost ./test/apiserver-cost
exec bin/apiserver-cost -bin "$bin" "$@"
