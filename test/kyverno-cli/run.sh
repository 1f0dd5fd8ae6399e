#!/usr/bin/env bash
# The Kyverno CLI as an oracle for admitc's Kyverno fixtures (make kyverno-cli).
#
#   test/kyverno-cli/run.sh [-v] [DIR...]
#   test/kyverno-cli/run.sh -build     # only build the CLI (make audit-load runs it)
#
# 1. Builds `kyverno` (github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno) at
#    the version the main go.mod requires, into test/kyverno-cli/.bin/, from
#    the tools module test/kyverno-cli/tools (its own go.mod and go.sum, so the
#    CLI's extra packages never enter the main go.sum). The tools module's
#    kyverno version and replace directives are synced from the main go.mod
#    first; the binary is rebuilt only when it is missing or the tools go.mod
#    changed. Offline but for the Go module proxy: ~5 min warm, 400 MB.
# 2. Builds admitc and the harness (test/kyverno-cli, package main).
# 3. Runs `kyverno test` and `admitc verify -o json` on every directory holding
#    a kyverno-test.yaml (or on the DIRs given), judged as
#    test/kyverno-cli/expectations.txt says (a directory not listed must pass),
#    and compares both tools' verdicts per policy and resource.
#
# Needs go, jq and flock. Every go command runs under the shared build lock
# (flock $BUILD_LOCK).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/test/kyverno-cli
BIN=$HERE/.bin
TOOLS=$HERE/tools
GO=${GO:-go}
BUILD_LOCK=${BUILD_LOCK:-/tmp/admitc-build.lock}
KYVERNO_MODULE=github.com/kyverno/kyverno
VERBOSE=()
BUILD_ONLY=
if [[ ${1:-} == -v ]]; then VERBOSE=(-v); shift; fi
if [[ ${1:-} == -build ]]; then BUILD_ONLY=1; shift; fi

locked() { flock "$BUILD_LOCK" "$@"; }

# sync_tools makes the tools module require the main go.mod's kyverno version
# with the main go.mod's replace directives.
sync_tools() {
	local version replaces
	version=$(cd "$ROOT" && $GO mod edit -json | jq -r --arg m "$KYVERNO_MODULE" '.Require[] | select(.Path == $m) | .Version')
	[[ -n $version ]] || { echo "run.sh: the main go.mod does not require $KYVERNO_MODULE" >&2; exit 2; }
	mapfile -t replaces < <(cd "$ROOT" && $GO mod edit -json | jq -r '(.Replace // [])[] |
		"-replace=\(.Old.Path)\(if .Old.Version then "@" + .Old.Version else "" end)=\(.New.Path)\(if .New.Version then "@" + .New.Version else "" end)"')
	mapfile -t old < <(cd "$TOOLS" && $GO mod edit -json | jq -r '(.Replace // [])[] | "-dropreplace=\(.Old.Path)\(if .Old.Version then "@" + .Old.Version else "" end)"')
	(cd "$TOOLS" && $GO mod edit "${old[@]}" -require="$KYVERNO_MODULE@$version" "${replaces[@]}")
	echo "$version"
}

# build_cli builds the CLI when the binary is missing or the tools module
# changed since it was built (the stamp is the tools go.mod's checksum).
build_cli() {
	local version stamp
	version=$(sync_tools)
	stamp=$(sha256sum "$TOOLS/go.mod" | cut -d' ' -f1)
	if [[ -x $BIN/kyverno && $(cat "$BIN/kyverno.stamp" 2>/dev/null) == "$stamp" ]]; then
		return
	fi
	mkdir -p "$BIN"
	echo "building the Kyverno CLI $version (about 5 minutes with a warm module cache) ..." >&2
	(cd "$TOOLS" && locked env GOFLAGS=-mod=mod $GO build -o "$BIN/kyverno.new" "$KYVERNO_MODULE/cmd/cli/kubectl-kyverno")
	mv "$BIN/kyverno.new" "$BIN/kyverno"
	echo "$stamp" > "$BIN/kyverno.stamp"
}

# fixture_dirs lists every directory holding a Kyverno test file, the
# directory above .kyverno-test/ for a test kept there.
fixture_dirs() {
	(cd "$ROOT" && find . -path ./.git -prune -o -path ./test/kyverno-cli/.bin -prune -o -name kyverno-test.yaml -print |
		sed -e 's|^\./||' -e 's|/kyverno-test.yaml$||' -e 's|/\.kyverno-test$||' | sort)
}

main() {
	build_cli
	if [[ -n $BUILD_ONLY ]]; then
		echo "$BIN/kyverno"
		return
	fi
	(cd "$ROOT" && locked $GO build -o "$BIN/admitc" ./cmd/admitc && locked $GO build -o "$BIN/kyverno-cli" ./test/kyverno-cli)
	local dirs=("$@") all=()
	if [[ ${#dirs[@]} -eq 0 ]]; then mapfile -t dirs < <(fixture_dirs); all=(-all); fi
	"$BIN/kyverno" version | sed -n 1p >&2
	cd "$ROOT"
	"$BIN/kyverno-cli" "${VERBOSE[@]}" "${all[@]}" -kyverno "$BIN/kyverno" -admitc "$BIN/admitc" -expect "$HERE/expectations.txt" "${dirs[@]}"
}

main "$@"
