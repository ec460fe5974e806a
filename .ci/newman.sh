#!/usr/bin/env bash
# Runs the Postman collection (openapi/postman/erpgate.postman_collection.json,
# the walk through the golden set) with newman twice in a row against one
# freshly built gateway and its embedded simulated ERP: the agent's steps
# without a key, the people's with the keys of the demonstration people the
# gateway prints at start. The second run meets the state the first left
# (invoices posted, approvals decided, a hold held) and must pass as the first
# did: both runs must end with no failed assertion. Prints the totals of each
# run. Needs Go, Node.js with npx, and curl.
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

# totals FILE prints the totals of the newman run whose JSON report is FILE
# and fails unless it ran requests and assertions and none of them failed.
totals() {
  node -e '
    const run = require(process.argv[1]).run;
    const s = run.stats;
    const ms = run.timings.completed - run.timings.started;
    console.log(`${s.requests.total} requests (${s.requests.failed} failed), ` +
      `${s.assertions.total} assertions (${s.assertions.failed} failed), ${(ms / 1000).toFixed(1)} s`);
    const ok = s.requests.total > 0 && s.assertions.total > 0 && s.requests.failed === 0 &&
      s.assertions.failed === 0 && s.testScripts.failed === 0 && run.failures.length === 0;
    process.exit(ok ? 0 : 1);
  ' "$1"
}

summary=()
for run in 1 2; do
  echo "--- newman, run $run"
  report="$tmp/newman-$run.json"
  status=0
  npx -y newman@6.2.2 run openapi/postman/erpgate.postman_collection.json \
    --env-var "baseUrl=$gw_url" --env-var "approverKey=$approver_key" --env-var "auditorKey=$auditor_key" \
    --timeout-request 10000 --timeout 120000 \
    --reporters cli,json --reporter-json-export "$report" \
    --color off --disable-unicode || status=$?
  line=$(totals "$report") || status=1
  summary+=("run $run: $line")
  if [ "$status" -ne 0 ]; then
    printf '%s\n' "${summary[@]}" >&2
    echo "newman: run $run of the collection failed" >&2
    echo "--- erpgate log (last 50 lines)" >&2
    tail -50 "$tmp/erpgate.log" >&2
    exit 1
  fi
done
echo "--- newman, both runs against one gateway"
printf '%s\n' "${summary[@]}"
