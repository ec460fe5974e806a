#!/usr/bin/env bash
# Lints the contract as the gateway serves it: /openapi.json and /openapi.yaml
# with Spectral (openapi/.spectral.yaml) and Redocly (openapi/redocly.yaml),
# and /swagger.json, the Swagger 2.0 copy, with swagger-cli, Spectral and
# Redocly. Fails on any error; warnings are printed. Needs Go, Node.js with
# npm, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

addr=127.0.0.1:18280
sim_addr=127.0.0.1:18290
# The public URL written into the served contract; a real address, so the
# "server points to localhost" lint rule holds.
public="http://$addr"
tmp=$(mktemp -d)
. .ci/lib.sh
trap 'stop_gateway; rm -rf "$tmp"' EXIT

echo "--- tools"
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true SCARF_ANALYTICS=false
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm" \
  @stoplight/spectral-cli@6.16.3 @redocly/cli@2.77.0 @apidevtools/swagger-cli@4.0.4 >"$tmp/npm.log" 2>&1 &
npm_pid=$!

echo "--- build"
go build -o "$tmp/erpgate" ./cmd/erpgate

echo "--- start erpgate on $addr"
start_gateway "$tmp/erpgate" "$addr" "$sim_addr" -public-url "$public"

echo "--- fetch"
fetch() { # path, file, content type
  local type
  type=$(curl -fsS --max-time 10 -o "$tmp/$2" -w '%{content_type}' "http://$addr$1") || {
    echo "contract: GET $1 failed" >&2; exit 1; }
  case "$type" in
    "$3"*) echo "$1: $type, $(wc -c <"$tmp/$2") bytes" ;;
    *) echo "contract: GET $1 has Content-Type $type, want $3" >&2; exit 1 ;;
  esac
  if ! grep -q "$public" "$tmp/$2" && ! grep -q "${public#http://}" "$tmp/$2"; then
    echo "contract: $1 does not name the public URL $public" >&2; exit 1
  fi
}
fetch /openapi.json openapi.json application/json
fetch /openapi.yaml openapi.yaml application/yaml
fetch /swagger.json swagger.json application/json
stop_gateway

if ! wait "$npm_pid"; then
  echo "contract: npm install failed" >&2; cat "$tmp/npm.log" >&2; exit 1
fi
bin="$tmp/npm/node_modules/.bin"
docs=("$tmp/openapi.json" "$tmp/openapi.yaml" "$tmp/swagger.json")

echo "--- spectral"
"$bin/spectral" lint --ruleset openapi/.spectral.yaml --fail-severity error "${docs[@]}"

echo "--- redocly"
"$bin/redocly" lint --config openapi/redocly.yaml "${docs[@]}"

echo "--- swagger-cli"
"$bin/swagger-cli" validate "$tmp/swagger.json"
