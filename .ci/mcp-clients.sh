#!/usr/bin/env bash
# Checks the README's two MCP client configurations as the clients use them,
# against a freshly built gateway started with an agent's API key and its
# embedded simulated ERP on free ports (.ci/mcp-clients.cjs does the calls):
#   1. the Claude Desktop / Cursor block (mcpServers): npx -y mcp-remote
#      <url> --header X-API-Key:${ERPGATE_KEY}, started with the block's
#      command, args and env, driven over stdio by the official TypeScript
#      SDK as a 2025-11-25 client (@modelcontextprotocol/sdk 1.x) and as a
#      2026-07-28 client (@modelcontextprotocol/client 2.x);
#   2. the VS Code block (servers, "type": "http"): its url and headers over
#      the SDKs' StreamableHTTPClientTransport, in both revisions.
# Every client calls run_three_way_match with a run_id (twice: the second
# is LOOP_DETECTED in that run), get_invoice 5105600999 (INVOICE_NOT_FOUND,
# an isError result with the five fields intact), get_invoice with the id
# as a JSON integer, and an unknown tool (a JSON-RPC error whose data holds
# the five fields). The URLs keep the README's host and path, with the
# gateway's port. mcp-remote is the pinned one below, installed in a scratch
# npm prefix that npx runs from, offline: nothing is downloaded at test time
# beyond the pinned installs. Needs Go, Node.js 20 or later with npm, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

MCP_REMOTE=mcp-remote@0.15.1
# The 1.x SDK, which most hosts embed, speaks up to 2025-11-25; the
# 2026-07-28 revision is in the 2.x client package.
SDK1=@modelcontextprotocol/sdk@1.32.2
SDK2=@modelcontextprotocol/client@2.4.0
README=README.md

# shellcheck source=lib.sh
source .ci/lib.sh
scratch mcp-clients.sh
started=$(date +%s)

case "$(node --version)" in
  v1[0-9].*) fail "mcp-remote and the SDKs need Node.js 20 or later, not $(node --version)" ;;
esac

echo "--- mcp-clients: build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- mcp-clients: install $MCP_REMOTE $SDK1 $SDK2"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm" "$MCP_REMOTE" "$SDK1" "$SDK2" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $MCP_REMOTE $SDK1 $SDK2"; }
[ -x "$tmp/npm/node_modules/.bin/mcp-remote" ] || fail "mcp-remote missing after npm install"

echo "--- mcp-clients: start erpgate with an agent's key"
key="agent-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
hash=$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)
start_gateway "$tmp/erpgate" -api-keys "ap-agent:$hash:read+write" || fail "erpgate did not start"
echo "erpgate at $gw_url"
status=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$gw_url/mcp" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
[ "$status" = 401 ] || fail "/mcp without a key answered $status, want 401: the clients' key would prove nothing"

echo "--- mcp-clients: the README's configurations"
# mcp-remote keeps its state in MCP_REMOTE_CONFIG_DIR, here the scratch
# directory, not the home directory.
README="$README" GATEWAY_PORT="${gw_addr##*:}" AGENT_KEY="$key" NPM_PREFIX="$tmp/npm" MCP_REMOTE_CONFIG_DIR="$tmp/mcp-auth" \
  NODE_PATH="$tmp/npm/node_modules" node .ci/mcp-clients.cjs || fail "an MCP client configuration of $README"

echo "--- mcp-clients: ok in $(($(date +%s) - started)) s"
