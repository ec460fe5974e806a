#!/usr/bin/env bash
# Lints both contracts as the gateway serves them: the agents' /openapi.json
# and /openapi.yaml and the people's /people/openapi.json and
# /people/openapi.yaml with Spectral (openapi/.spectral.yaml) and Redocly
# (openapi/redocly.yaml), and /swagger.json, the agents' Swagger 2.0 copy,
# with swagger-cli, Spectral and Redocly. Fails on any error; warnings are
# printed. Needs Go, Node.js with npm, and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

# The public URL written into the served contract. It names neither
# localhost nor example.com, which Redocly's no-server-example.com rule
# warns about (example.net is as reserved for documentation), and it is not
# the address the contract is fetched from, so the check below shows
# -public-url at work.
public=https://erpgate.example.net
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

echo "--- start erpgate"
start_gateway "$tmp/erpgate" -public-url "$public"
echo "erpgate at $gw_url, its contract names $gw_public"
[ "$gw_public" = "$public" ] || { echo "contract: erpgate names $gw_public, want $public" >&2; exit 1; }

echo "--- fetch"
# fetch PATH FILE CONTENT_TYPE SERVER gets PATH from the gateway into
# $tmp/FILE and checks its Content-Type, that it names the public URL (SERVER
# is how the document writes it) and that it does not name the default,
# localhost with the gateway's port.
fetch() {
  local type
  type=$(curl -fsS --max-time 10 -o "$tmp/$2" -w '%{content_type}' "$gw_url$1") || {
    echo "contract: GET $1 failed" >&2; exit 1; }
  case "$type" in
    "$3"*) echo "$1: $type, $(wc -c <"$tmp/$2") bytes" ;;
    *) echo "contract: GET $1 has Content-Type $type, want $3" >&2; exit 1 ;;
  esac
  if ! grep -qF "$4" "$tmp/$2"; then
    echo "contract: $1 does not name the public URL $public (no $4)" >&2; exit 1
  fi
  if grep -qF "localhost:${gw_addr##*:}" "$tmp/$2"; then
    echo "contract: $1 names localhost:${gw_addr##*:}, not only the public URL $public" >&2; exit 1
  fi
}
host=${public#https://}
fetch /openapi.json openapi.json application/json "\"url\":\"$public\""
fetch /openapi.yaml openapi.yaml application/yaml "url: \"$public\""
fetch /swagger.json swagger.json application/json "\"host\":\"$host\""
fetch /people/openapi.json people.json application/json "\"url\":\"$public\""
fetch /people/openapi.yaml people.yaml application/yaml "url: \"$public\""
# The agents' contract holds the agents' operations only, the people's
# those of people only.
for op in decide_approval list_approvals list_handovers get_audit; do
  for f in openapi.json openapi.yaml swagger.json; do
    if grep -qF "$op" "$tmp/$f"; then echo "contract: the agents' $f names $op" >&2; exit 1; fi
  done
  grep -qF "\"operationId\":\"$op\"" "$tmp/people.json" || { echo "contract: the people's contract has no $op" >&2; exit 1; }
done
grep -qF '"schemes":["https"]' "$tmp/swagger.json" || { echo "contract: /swagger.json does not name the scheme https" >&2; exit 1; }
stop_gateway

if ! wait "$npm_pid"; then
  echo "contract: npm install failed" >&2; cat "$tmp/npm.log" >&2; exit 1
fi
bin="$tmp/npm/node_modules/.bin"
docs=("$tmp/openapi.json" "$tmp/openapi.yaml" "$tmp/swagger.json" "$tmp/people.json" "$tmp/people.yaml")

echo "--- spectral"
"$bin/spectral" lint --ruleset openapi/.spectral.yaml --fail-severity error "${docs[@]}"

echo "--- redocly"
"$bin/redocly" lint --config openapi/redocly.yaml "${docs[@]}"

echo "--- swagger-cli"
"$bin/swagger-cli" validate "$tmp/swagger.json"
