#!/usr/bin/env bash
# Runs the Postman collection (openapi/postman/erpgate.postman_collection.json,
# the walk through the golden set) with newman against a freshly built gateway
# and its embedded simulated ERP: the agent's steps without a key, the
# people's with the keys of the demonstration people the gateway prints at
# start. Needs Go, Node.js with npx, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

tmp=$(mktemp -d)
. .ci/lib.sh
trap 'stop_gateway; rm -rf "$tmp"' EXIT

echo "--- build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- start erpgate"
start_gateway "$tmp/erpgate"
echo "erpgate at $gw_url, simulated ERP at $sim_url"
approver_key=$(demo_key KELLER_KEY)
auditor_key=$(demo_key AUDITOR_KEY)

echo "--- newman"
if ! npx -y newman@6.2.2 run openapi/postman/erpgate.postman_collection.json \
  --env-var "baseUrl=$gw_url" --env-var "approverKey=$approver_key" --env-var "auditorKey=$auditor_key" \
  --timeout-request 10000 --timeout 120000 \
  --color off --disable-unicode; then
  echo "--- erpgate log (last 50 lines)" >&2
  tail -50 "$tmp/erpgate.log" >&2
  exit 1
fi
