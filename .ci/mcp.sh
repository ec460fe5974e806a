#!/usr/bin/env bash
# Checks that the error contract reaches an MCP client intact, on two paths,
# with `erpgate conformance` against a freshly built gateway and its
# embedded simulated ERP:
#   1. erpgate's own MCP endpoint, /mcp (Streamable HTTP);
#   2. the third-party OpenAPI-to-MCP bridge @ivotoby/openapi-mcp-server
#      over stdio, generated from the served /openapi.json.
# Each run prints, per named outcome, whether isError, code, message,
# retryable, next_action and details arrived intact, and what the path keeps
# per field. Needs Go, Node.js with npm, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

BRIDGE=@ivotoby/openapi-mcp-server@1.16.1

# shellcheck source=lib.sh
source .ci/lib.sh
tmp=$(mktemp -d)
cleanup() {
  stop_gateway
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "mcp.sh: FAIL: $*" >&2
  if [ -f "$tmp/erpgate.log" ]; then
    echo "--- erpgate log (last 30 lines)" >&2
    tail -30 "$tmp/erpgate.log" >&2
  fi
  exit 1
}

echo "--- mcp: build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- mcp: start erpgate"
start_gateway "$tmp/erpgate" || fail "erpgate did not start"
base=$gw_url
echo "erpgate at $base, simulated ERP at $sim_url"

echo "--- mcp: conformance of erpgate's /mcp"
"$tmp/erpgate" conformance -url "$base/mcp" -timeout 60s || fail "erpgate's /mcp lost part of the error contract"

echo "--- mcp: install $BRIDGE"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm" "$BRIDGE" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $BRIDGE"; }
bridge="$tmp/npm/node_modules/.bin/openapi-mcp-server"
[ -x "$bridge" ] || fail "$bridge missing after npm install"

echo "--- mcp: conformance through $BRIDGE (stdio)"
# The bridge reads the contract from the gateway and calls its REST API;
# --verbose false keeps its per-call logging off stderr.
"$tmp/erpgate" conformance -timeout 90s -cmd "'$bridge' --api-base-url $base --openapi-spec $base/openapi.json --transport stdio --verbose false" ||
  fail "the error contract did not arrive intact through $BRIDGE"

echo "--- mcp: ok"
