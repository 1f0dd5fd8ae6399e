#!/usr/bin/env bash
# Load runs on loopback: admitc serve (the example policies) beside a stdlib
# HTTPS echo handler (the baseline), same machine, same run.
#   MODE=ramp     test/load/run.sh   # highest sustained rate (p99 <= 10 ms, 0 errors), p50/p99 at 1,000/s and 2,000/s, as ratios
#   MODE=fixed    RATE=2000 DURATION=10s test/load/run.sh
#   MODE=overload RATE=10000 DURATION=120s test/load/run.sh # 5x capacity: bounded latency, flat memory (RSS, goroutines, goodput every 10 s)
#   MODE=soak     RATE=500 test/load/run.sh   # 60 s, the full and the serve-only binary: size, RSS at rest and after
# overload fails when the server answers slower than TIMEOUT, leaves a review it read unanswered, or its RSS
# passes MAX_RSS MiB (256: the webhook backend's memory limit).
# SERVE_FLAGS are added to admitc serve's arguments (SERVE_FLAGS="--max-concurrent-streams 32").
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${MODE:-ramp}; RATE=${RATE:-2000}; DURATION=${DURATION:-10s}; CONNS=${CONNS:-16}
work=$(mktemp -d)
pids=()
cleanup() { [ -n "${KEEP_LOG:-}" ] && cp "$work/serve.log" "$KEEP_LOG" 2>/dev/null; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w" -o "$work/admitc" ./cmd/admitc
go build -trimpath -ldflags "-s -w" -tags serveonly -o "$work/admitc-serve" ./cmd/admitc
go build -o "$work/load" ./test/load
"$work/admitc" certs --out "$work/tls" --dns localhost --ip 127.0.0.1 >/dev/null
review=examples/reviews/review-pod.json

# serve BINARY PORT: start admitc serve on the example policies; sets served_pid.
serve() {
  GODEBUG=${SERVE_GODEBUG:-} \
  "$1" serve --policies examples/policies/policies.json --cert "$work/tls/tls.crt" --key "$work/tls/tls.key" \
    --host 127.0.0.1 --port "$2" ${SERVE_FLAGS:-} 2>>"$work/serve.log" & pids+=($!); served_pid=$!
  healthy "$2"
}
healthy() { for _ in $(seq 100); do curl -sk "https://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "server on $1 did not start" >&2; cat "$work/serve.log" >&2; return 1; }
rss_mib() { awk '/^VmRSS:/ {printf "%d", $2/1024}' "/proc/$1/status"; }
size_mib() { stat -c %s "$1" | awk '{printf "%.0f", $1/1048576}'; }

status=0
case "$MODE" in
ramp|fixed)
  serve "$work/admitc-serve" 18443; admitc_pid=$served_pid
  "$work/load" echo -addr 127.0.0.1:19443 -cert "$work/tls/tls.crt" -key "$work/tls/tls.key" & pids+=($!); echo_pid=$!
  healthy 19443
  if [ "$MODE" = ramp ]; then
    "$work/load" ramp -ca "$work/tls/ca.crt" -review $review -conns "$CONNS" -step-duration "${STEP_DURATION:-4s}" -max "${RAMP_MAX:-12000}" \
      -target "baseline=https://127.0.0.1:19443/validate@$echo_pid" \
      -target "validate=https://127.0.0.1:18443/validate@$admitc_pid" \
      -target "mutate=https://127.0.0.1:18443/mutate@$admitc_pid" || status=1
  else
    for t in "baseline 19443 validate $echo_pid" "validate 18443 validate $admitc_pid" "mutate 18443 mutate $admitc_pid"; do
      set -- $t
      "$work/load" run -name "$1" -url "https://127.0.0.1:$2/$3" -ca "$work/tls/ca.crt" -review $review -rate "$RATE" -duration "$DURATION" -conns "$CONNS" -pid "$4" || status=1
    done
  fi ;;
overload)
  # The API server sends ?timeout= (the webhook's timeoutSeconds); past its
  # deadline a review is not evaluated and the answer is an error, so the
  # API server applies the failure policy instead of waiting.
  "$work/load" echo -addr 127.0.0.1:19443 -cert "$work/tls/tls.crt" -key "$work/tls/tls.key" & pids+=($!); echo_pid=$!
  healthy 19443
  "$work/load" run -name baseline -overload -url "https://127.0.0.1:19443/validate?timeout=${TIMEOUT:-2s}" -ca "$work/tls/ca.crt" -review $review \
    -rate "${RATE}" -duration "${BASELINE_DURATION:-20s}" -conns "${CONNS}" -pid "$echo_pid" -every 10s || true
  kill "$echo_pid"
  serve "$work/admitc-serve" 18443
  echo "rss at rest: $(rss_mib "$served_pid") MiB"
  "$work/load" run -name overload -overload -url "https://127.0.0.1:18443/validate?timeout=${TIMEOUT:-2s}" -ca "$work/tls/ca.crt" -review $review \
    -rate "${RATE}" -duration "$DURATION" -conns "${CONNS}" -pid "$served_pid" -max-p99 "${TIMEOUT:-2s}" \
    -every 10s -metrics https://127.0.0.1:18443/metrics -max-rss "${MAX_RSS:-256}" || status=1
  # What the webhook shed and refused, once the load has stopped.
  curl -s --cacert "$work/tls/ca.crt" https://127.0.0.1:18443/metrics | grep -E '^admitc_(connections|http2)' || true ;;
soak)
  printf '%-12s %8s %14s %16s %14s\n' binary size "RSS at rest" "RSS after soak" "reviews"
  for bin in admitc admitc-serve; do
    serve "$work/$bin" 18443
    sleep 1; rest=$(rss_mib "$served_pid")
    line=$("$work/load" run -name "$bin" -url https://127.0.0.1:18443/validate -ca "$work/tls/ca.crt" -review $review -rate "${RATE:-500}" -duration 60s -conns "$CONNS" -pid "$served_pid") || status=1
    echo "$line" >&2
    printf '%-12s %6s MiB %10s MiB %12s MiB %14s\n' "$bin" "$(size_mib "$work/$bin")" "$rest" "$(rss_mib "$served_pid")" "$(echo "$line" | sed -n 's/.* ok=\([0-9]*\).*/\1/p') ok"
    kill "$served_pid"; wait "$served_pid" 2>/dev/null || true
  done ;;
*) echo "MODE must be ramp, fixed, overload or soak" >&2; exit 2 ;;
esac
exit $status
