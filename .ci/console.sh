#!/usr/bin/env bash
# Drives the web console in a real browser: Debian's headless Chromium
# through playwright-core (npm), with the flags that keep Chromium off the
# network, against a freshly built gateway and its embedded simulated ERP.
# An agent (curl, with its API key) walks the golden set's pending path of
# 5105600102 (TOLERANCE_EXCEEDED, a first proposal superseded by a second,
# approval pending, post refused, held until the decision, handed over) and
# the README's run-0042; then a person, in the browser only, signs in,
# finds both handovers with their errors, takes the first, sees the
# superseded approval without a decision form, opens the pending one and
# sees the evidence (the supplier, PO 4500018823, 135.00 against 125.00,
# the 8 % variance against the 2 % / 50.00 tolerance) and sends it back to
# the agent with a question; the agent reads the question on get_approval
# and asks again with its answer, which the person approves by keyboard
# only, after which the agent's post_invoice succeeds; the person resolves
# the handover, and reads the invoice's case with its history. An agent's
# key cannot sign in and a form without its CSRF token is refused. axe-core
# checks every page: no serious or critical violations. Last, the agent
# (curl) reads the question of the approval sent back.
# CONSOLE_SCREENSHOTS=DIR saves a PNG of each page into DIR (the README's
# are made with CONSOLE_SCREENSHOTS=api/console/screenshots).
# Needs Go, Node.js with npm, curl and sha256sum; installs chromium with
# apt-get when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

PLAYWRIGHT=playwright-core@1.65.1
AXE=axe-core@4.14.1

# shellcheck source=lib.sh
source .ci/lib.sh
scratch console.sh

if [ ! -x /usr/bin/chromium ]; then
  echo "--- console: apt-get install chromium"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq chromium >"$tmp/apt.log" 2>&1 ||
    { cat "$tmp/apt.log" >&2; fail "apt-get install chromium"; }
fi
/usr/bin/chromium --version

echo "--- console: install $PLAYWRIGHT $AXE"
npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp/npm" "$PLAYWRIGHT" "$AXE" >"$tmp/npm.log" 2>&1 ||
  { cat "$tmp/npm.log" >&2; fail "npm install $PLAYWRIGHT $AXE"; }

echo "--- console: build and start erpgate with an agent's key, an approver's and an auditor's"
go build -o "$tmp/erpgate" ./cmd/erpgate
agent_key="agent-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
person_key="person-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
audit_key="audit-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
hash() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
start_gateway "$tmp/erpgate" -api-keys "agent:$(hash "$agent_key"):read+write,m.keller:$(hash "$person_key"):approve+review,a.berg:$(hash "$audit_key"):audit" ||
  fail "erpgate did not start"
base=$gw_url
echo "erpgate at $base"

# agent METHOD PATH [BODY] [RUN]: one call of the agent; prints the body
# and appends the status to $tmp/status.
agent() {
  local args=(-s -o "$tmp/body" -w '%{http_code}' -X "$1" "$base$2" -H "X-API-Key: $agent_key")
  [ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' -d "$3")
  [ -n "${4:-}" ] && args+=(-H "X-Run-Id: $4")
  curl "${args[@]}" >"$tmp/status"
  cat "$tmp/body"
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
expect() { [ "$(cat "$tmp/status")" = "$1" ] || fail "$2: HTTP $(cat "$tmp/status"), want $1: $(cat "$tmp/body")"; }

echo "--- console: the agent's walk"
agent POST /invoices/5105600103/three-way-match "" run-0042 >/dev/null
expect 404 "match 5105600103"
agent POST /invoices/5105600103/three-way-match "" run-0042 >/dev/null
expect 409 "match 5105600103 again"
ho_103=$(agent POST /handovers '{"invoice_id":"5105600103","code":"PO_NOT_FOUND","summary":"Invoice references PO 4500019822, which does not exist; 4500018822 is the likely intended PO."}' run-0042 | field handover_id)
expect 200 "hand over 5105600103"

agent POST /invoices/5105600102/three-way-match "" run-0102 | grep -q '"TOLERANCE_EXCEEDED"' || fail "5105600102 is not TOLERANCE_EXCEEDED"
superseded_id=$(agent POST /invoices/5105600102/approvals '{"proposed_action":"post_as_invoiced","justification":"Post at the invoiced price without a variance note."}' run-0102 | field approval_id)
expect 200 "request_approval post_as_invoiced"
approve_id=$(agent POST /invoices/5105600102/approvals '{"proposed_action":"accept_variance","justification":"Unit price 135.00 is 8 % over the PO price 125.00; supplier cites a raw-material surcharge."}' run-0102 | field approval_id)
expect 200 "request_approval accept_variance (supersedes $superseded_id)"
agent POST /invoices/5105600102/post "{\"approval_id\":\"$approve_id\"}" run-0102 | grep -q '"reason":"pending"' || fail "post before the decision is not APPROVAL_MISSING pending"
agent POST /invoices/5105600102/hold "{\"reason\":\"Approval $approve_id is pending a person's decision.\"}" run-0102 | grep -q "\"approval_id\":\"$approve_id\"" ||
  fail "the hold of 5105600102 does not wait for $approve_id"
expect 200 "hold 5105600102"
ho_102=$(agent POST /handovers '{"invoice_id":"5105600102","code":"TOLERANCE_EXCEEDED","summary":"Unit price 8 % over the PO; approval pending with ap_manager, posting refused until it is decided.","evidence":["Three-way match: unit price 135.00 EUR against 125.00 EUR on the PO","Supplier cites a raw-material surcharge"]}' run-0102 | field handover_id)
expect 200 "hand over 5105600102"
agent POST /invoices/5105600105/hold "{\"reason\":\"No goods receipt yet for PO 4500018822 item 20\",\"recheck_at\":\"$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)\"}" >/dev/null
expect 200 "hold 5105600105"
echo "handovers $ho_103 $ho_102, approvals $approve_id (to approve) $superseded_id (superseded)"

echo "--- console: the person's walk in Chromium"
screenshots=""
if [ -n "${CONSOLE_SCREENSHOTS:-}" ]; then
  mkdir -p "$CONSOLE_SCREENSHOTS"
  screenshots=$(cd "$CONSOLE_SCREENSHOTS" && pwd)
fi
question="Is the raw-material surcharge agreed in the framework contract with Acme?"
BASE=$base AGENT_KEY=$agent_key PERSON_KEY=$person_key APPROVE_ID=$approve_id SUPERSEDED_ID=$superseded_id \
  HANDOVER_102=$ho_102 HANDOVER_103=$ho_103 QUESTION=$question SCREENSHOTS=$screenshots \
  NODE_PATH="$tmp/npm/node_modules" node .ci/console.cjs || fail "the console walk in the browser"

echo "--- console: the agent reads the question of the approval sent back"
agent GET "/approvals/$approve_id" >"$tmp/sent_back.json"
expect 409 "get_approval $approve_id after it was sent back"
grep -q '"code":"APPROVAL_SENT_BACK"' "$tmp/sent_back.json" || fail "get_approval $approve_id is not APPROVAL_SENT_BACK: $(cat "$tmp/sent_back.json")"
grep -qF "\"question\":\"$question\"" "$tmp/sent_back.json" || fail "get_approval $approve_id does not carry the question: $(cat "$tmp/sent_back.json")"
BASE=$base PERSON_KEY=$person_key AUDIT_KEY=$audit_key APPROVE_ID=$approve_id HANDOVER_102=$ho_102 RUN_ID=run-0102 CASE_INVOICE=5105600102 NODE_PATH="$tmp/npm/node_modules" node .ci/console-narrow.cjs || fail "every page at 390 and 1280 px: no sideways scrolling, axe-core clean"
ERPGATE_BIN="$tmp/erpgate" SCREENSHOTS=$screenshots NODE_PATH="$tmp/npm/node_modules" node .ci/console-security.cjs || fail "sign-in throttled, sign-out ends copied cookies, the audit page and its CSV in the browser"

echo "--- console: the gateway logged the person's sign-in"
grep -q "console sign-in" "$tmp/erpgate.log" || fail "no console sign-in in the gateway's log"
echo "console.sh: OK"
