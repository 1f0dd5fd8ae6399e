#!/usr/bin/env bash
# admitc audit on a kube-apiserver filling up with pods (make audit-load):
#
#   test/audit-load/run.sh [flags of test/audit-load]
#
# 1. Builds kube-apiserver and etcd v1.37.2 once per machine
#    (test/e2e/build-binaries.sh) and admitc (stripped, as released).
# 2. Runs test/audit-load: etcd and kube-apiserver on loopback, 50
#    namespaces filled with pods in stages (5,000 then 20,000), and at each
#    stage `admitc audit` with 40 Pod Security and best-practice Kyverno
#    ClusterPolicies (examples/kyverno-pattern), Reports written to files;
#    at 5,000 pods also `kyverno apply --cluster --policy-report` on the
#    same files when test/kyverno-cli/.bin/kyverno exists (build it once with
#    `test/kyverno-cli/run.sh -build`; `make kyverno-cli` builds it and runs
#    its fixture suite). Kyverno's peak RSS (about 9 GB at 5,000 pods) rules
#    out 20,000 on a 24 GB machine (-kyverno-stages). Prints objects/s and
#    peak RSS; exits 1 when admitc's peak RSS is over -max-rss MiB or grows
#    more than -max-rss-growth times.
#
# Not part of make test: filling the API server and the two audits take
# about 6 minutes on 2 cores, Kyverno's run about 4 more.
# Every go command runs under the shared build lock (flock $BUILD_LOCK).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
BUILD_LOCK=${BUILD_LOCK:-/tmp/admitc-build.lock}
locked() { flock "$BUILD_LOCK" "$@"; }
bin=$(test/e2e/build-binaries.sh)
mkdir -p bin
locked env CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w" -o bin/admitc ./cmd/admitc
locked $GO build -o bin/audit-load ./test/audit-load
exec bin/audit-load -bin "$bin" -admitc bin/admitc -kyverno test/kyverno-cli/.bin/kyverno "$@"
