#!/usr/bin/env bash
# Checks that the error contract reaches an MCP client intact, with
# `erpgate conformance` against a freshly built gateway and its embedded
# simulated ERP, on these paths:
#   1. erpgate's own MCP endpoint, /mcp (Streamable HTTP): all outcomes;
#   2. the third-party OpenAPI-to-MCP bridge @ivotoby/openapi-mcp-server
#      over stdio, generated from the served /openapi.json: all outcomes;
#   3. @twilio-alpha/openapi-mcp-server over stdio, from
#      /openapi.json?flat=1: all outcomes, its errors counted as JSON-RPC
#      errors (-rpc-errors);
#   4. openapi-mcp-generator over stdio, from /openapi.json?flat=1: held
#      to the outcomes and the fields below that it can keep.
# Each run prints, per named outcome, whether isError, code, message,
# retryable, next_action and details arrived intact, and what the path keeps
# per field, and fails when the path offers an operation of people as a
# tool: /openapi.json is the agents' contract only. Needs Go, Node.js with
# npm, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

BRIDGE=@ivotoby/openapi-mcp-server@1.16.1
TWILIO=@twilio-alpha/openapi-mcp-server@0.7.0
GENERATOR=openapi-mcp-generator@4.0.1

# twilio turns every error status into a JSON-RPC error whose message is
# the body as the gateway wrote it (it cannot set isError), and sends every
# argument of a POST as the body, the path's invoice_id included, which the
# gateway takes when it is the path's. Held to all 10 outcomes, the error
# signalled by the JSON-RPC error.
# openapi-mcp-generator never sets isError, and passes on only the first
# 200 characters of an error body: only the match result (TOLERANCE_EXCEEDED,
# not an error) can arrive intact, and of each error code, message,
# retryable and next_action (the gateway keeps them within the first 200
# bytes) but not details.
GENERATOR_MIN=1
GENERATOR_FIELDS=code,message,retryable,next_action
# The operations of people, in their own contract: no path may offer them.
PEOPLE_OPS=decide_approval,list_approvals,list_handovers,get_audit

# shellcheck source=lib.sh
source .ci/lib.sh
scratch mcp.sh

echo "--- mcp: build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- mcp: start erpgate"
start_gateway "$tmp/erpgate" || fail "erpgate did not start"
base=$gw_url
echo "erpgate at $base, simulated ERP at $sim_url"

echo "--- mcp: conformance of erpgate's /mcp"
"$tmp/erpgate" conformance -url "$base/mcp" -timeout 60s -absent "$PEOPLE_OPS" || fail "erpgate's /mcp lost part of the error contract"

echo "--- mcp: install $BRIDGE"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm" "$BRIDGE" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $BRIDGE"; }
bridge="$tmp/npm/node_modules/.bin/openapi-mcp-server"
[ -x "$bridge" ] || fail "$bridge missing after npm install"

echo "--- mcp: conformance through $BRIDGE (stdio)"
# The bridge reads the contract from the gateway and calls its REST API;
# --verbose false keeps its per-call logging off stderr.
"$tmp/erpgate" conformance -timeout 90s -absent "$PEOPLE_OPS" -cmd "'$bridge' --api-base-url $base --openapi-spec $base/openapi.json --transport stdio --verbose false" ||
  fail "the error contract did not arrive intact through $BRIDGE"

echo "--- mcp: conformance through $TWILIO (stdio)"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm-twilio" "$TWILIO" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $TWILIO"; }
# It reads the .yaml files of a directory (JSON is YAML), resolves no $ref
# and takes each operation's base URL from its path's servers: the flat
# contract, which has both.
mkdir -p "$tmp/twilio-spec"
curl -fsS "$base/openapi.json?flat=1" -o "$tmp/flat.json" || fail "GET /openapi.json?flat=1"
cp "$tmp/flat.json" "$tmp/twilio-spec/erpgate.yaml"
"$tmp/erpgate" conformance -timeout 90s -rpc-errors -absent "$PEOPLE_OPS" \
  -cmd "'$tmp/npm-twilio/node_modules/.bin/openapi-mcp-server' --apiPath '$tmp/twilio-spec'" ||
  fail "the error contract did not arrive intact through $TWILIO"

echo "--- mcp: conformance through $GENERATOR (stdio)"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm-generator" "$GENERATOR" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $GENERATOR"; }
# It writes a TypeScript MCP server for the contract, with the base URL
# built in, which is installed and compiled before it runs.
"$tmp/npm-generator/node_modules/.bin/openapi-mcp-generator" -i "$tmp/flat.json" -o "$tmp/generated" -b "$base" -t stdio >"$tmp/generator.log" 2>&1 ||
  { cat "$tmp/generator.log" >&2; fail "$GENERATOR did not generate a server"; }
(cd "$tmp/generated" && npm install --no-audit --no-fund --loglevel=error && npm run build) >"$tmp/generator.log" 2>&1 ||
  { cat "$tmp/generator.log" >&2; fail "the server $GENERATOR generated did not build"; }
"$tmp/erpgate" conformance -timeout 90s -min "$GENERATOR_MIN" -fields "$GENERATOR_FIELDS" -absent "$PEOPLE_OPS" \
  -cmd "node '$tmp/generated/build/index.js'" ||
  fail "$GENERATOR kept fewer than $GENERATOR_MIN outcomes intact, or lost one of $GENERATOR_FIELDS"

echo "--- mcp: ok"
