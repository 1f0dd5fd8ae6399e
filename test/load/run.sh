#!/usr/bin/env bash
# Side-by-side load run on loopback: admitc serve (example policies) and a
# stdlib HTTPS echo handler (the baseline), same machine, same run.
#   RATE=2000 DURATION=10s test/load/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${RATE:-2000}; DURATION=${DURATION:-10s}; CONNS=${CONNS:-16}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/admitc" ./cmd/admitc
go build -o "$work/load" ./test/load
"$work/admitc" certs --out "$work/tls" --dns localhost --ip 127.0.0.1 >/dev/null
"$work/admitc" serve --policies examples/policies/policies.json --cert "$work/tls/tls.crt" --key "$work/tls/tls.key" \
  --host 127.0.0.1 --port 18443 2>"$work/serve.log" & pids+=($!); admitc_pid=$!
"$work/load" echo -addr 127.0.0.1:19443 -cert "$work/tls/tls.crt" -key "$work/tls/tls.key" & pids+=($!); echo_pid=$!
for port in 18443 19443; do
  for i in $(seq 50); do curl -sk "https://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
done
review=examples/reviews/review-pod.json
status=0
"$work/load" run -name baseline -url https://127.0.0.1:19443/validate -ca "$work/tls/ca.crt" -review $review -rate "$RATE" -duration "$DURATION" -conns "$CONNS" -pid "$echo_pid" || status=1
"$work/load" run -name validate -url https://127.0.0.1:18443/validate -ca "$work/tls/ca.crt" -review $review -rate "$RATE" -duration "$DURATION" -conns "$CONNS" -pid "$admitc_pid" || status=1
"$work/load" run -name mutate -url https://127.0.0.1:18443/mutate -ca "$work/tls/ca.crt" -review $review -rate "$RATE" -duration "$DURATION" -conns "$CONNS" -pid "$admitc_pid" || status=1
exit $status
