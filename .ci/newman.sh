#!/usr/bin/env bash
# Runs the Postman collection (openapi/postman/erpgate.postman_collection.json,
# the walk through the golden set) with newman against a freshly built gateway
# and its embedded simulated ERP. Needs Go, Node.js with npx, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

addr=127.0.0.1:18180
sim_addr=127.0.0.1:18190
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if curl -s -o /dev/null --max-time 1 "http://$addr/healthz"; then
  echo "newman: something already answers on $addr" >&2
  exit 1
fi

echo "--- build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- start erpgate on $addr"
# ERPGATE_* settings from the environment (API keys, limits) would change the
# outcomes the walk expects.
unset_vars=()
while IFS='=' read -r name _; do
  case "$name" in ERPGATE_*) unset_vars+=(-u "$name") ;; esac
done < <(env)
env "${unset_vars[@]}" "$tmp/erpgate" -addr "$addr" -sim-addr "$sim_addr" >"$tmp/erpgate.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
  if curl -fs -o /dev/null --max-time 1 "http://$addr/healthz"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "newman: erpgate exited:" >&2; cat "$tmp/erpgate.log" >&2; exit 1
  fi
  sleep 0.2
done
curl -fs -o /dev/null "http://$addr/healthz" || { echo "newman: erpgate not healthy" >&2; tail -50 "$tmp/erpgate.log" >&2; exit 1; }

echo "--- newman"
if ! npx -y newman@6.2.2 run openapi/postman/erpgate.postman_collection.json \
  --env-var "baseUrl=http://$addr" --timeout-request 10000 --timeout 120000 \
  --color off --disable-unicode; then
  echo "--- erpgate log (last 50 lines)" >&2
  tail -50 "$tmp/erpgate.log" >&2
  exit 1
fi
