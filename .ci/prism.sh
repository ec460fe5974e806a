#!/usr/bin/env bash
# Holds the SAP client to SAP's API Hub OpenAPI files (OP_API_*.json in
# ../shared/sapspecs) with Prism (@stoplight/prism-cli), in two modes:
#
#   bash .ci/prism.sh [proxy|mock|all]     (default all: proxy, then mock)
#
# Both modes put one Prism per OpenAPI file (each on a port Prism picks,
# --port 0) behind a small Node.js router that sends
# /sap/opu/odata/sap/<SERVICE>/... to the Prism of that service, and run the
# gateway, built from ./cmd/erpgate, with -erp-url pointing at the router and
# a basic-auth user (SAP's files require basic authentication).
#
# PROXY mode: Prism as a validating proxy in front of the simulated ERP
# (./cmd/erpsim, built, started with -addr 127.0.0.1:0; its "erpsim
# listening on URL" line gives the port), `prism proxy <file> <simulator
# service root> --errors`. The golden read walk then goes through the
# gateway: invoices 5105600101..5105600109 and an unknown one, the purchase
# orders of the golden set and an unknown one, the goods receipts of PO
# 4500018822 items 10 and 20, supplier 100042 and a supplier search, and
# three-way matches (which read all of these), so the requests Prism sees
# are the ones the real client builds.
#
# What proxy mode checks: every request the client sends (path, query
# parameters and their schemas, such as $expand's allowed values, the
# required ones present) and every answer of the simulator (status, and the
# body against the response schema: the types of the properties SAP
# declares) against SAP's OpenAPI files. Any Prism validation error or
# warning fails the run, and so does a gateway answer other than the one the
# walk expects.
#
# What proxy mode cannot check:
#   - operations a file lacks: no OpenAPI file describes $metadata (which
#     the gateway reads at start) or the service root (the CSRF token
#     fetch), so the router sends those straight to the simulator and the
#     summary lists them as UNCHECKED; the supplier invoice file (API Hub,
#     release 2021) has no Post function import. A request for any other
#     path a file lacks is answered 404 NO_PATH_MATCHED by Prism, which
#     fails the run;
#   - what the schemas leave open: they allow additional properties, so an
#     extra property in an answer passes here (erp/sim's
#     TestAnswersHaveSAPShapes holds answers to the $metadata), and a query
#     parameter a file does not declare (such as $skiptoken) is not refused;
#   - writes: the walk only reads (posting is held to the $metadata by the
#     Go tests through sapspec.CheckedTransport);
#   - a file Prism cannot load is skipped with a loud message, and the
#     requests of its service go to the simulator unchecked (the summary
#     names them).
#
# MOCK mode: Prism as a mock, `prism mock <file>` in static mode: every
# answer is built from the file's examples and schemas alone (strings such
# as "string" cut to the property's maxLength, decimals "0", dates
# "/Date(1492041600000)/", one entry per list), with no simulator behind
# it. $metadata, which no OpenAPI file has, is answered by the router with
# SAP's published $metadata of the service from ../shared/sapspecs
# (OP_<SERVICE>.edmx, OP_<SERVICE>_SRV.edmx or <SERVICE>.edmx, the first
# that exists), and the service root, the CSRF token fetch, with a token of
# its own. The gateway runs with -erp-attempts $MOCK_ATTEMPTS.
#
# What mock mode checks, for answers shaped only by SAP's schemas:
#   - every read the gateway offers (get_invoice, get_purchase_order,
#     get_supplier, search_suppliers, get_goods_receipt,
#     run_three_way_match, and request_approval, which reads the invoice)
#     decodes: the gateway answers 200, or a five-field error (code,
#     message, retryable, next_action, details) whose code is a business
#     outcome (INVOICE_NOT_FOUND, PO_NOT_FOUND, SUPPLIER_NOT_FOUND,
#     GR_MISSING, PO_CLOSED, DUPLICATE_INVOICE, APPROVAL_MISSING); never
#     ERP_UNAVAILABLE, ERP_CONFIGURATION, INTERNAL, and never an answer
#     whose cause in the gateway's log (its access log line, found by the
#     X-Request-Id of the answer) is a malformed response. The one
#     exception: the mock's documents have other ids than the ones asked
#     for ("string"), which the gateway rightly refuses as an ERP fault
#     (ERP_UNAVAILABLE, cause "answer about another ...");
#   - post_invoice, after a request_approval the gateway keeps in its own
#     records, succeeds or gives one five-field answer (not INTERNAL, not a
#     malformed response), and no more Post requests than -erp-attempts
#     reach the mock. Against the mocks alone the post stops in the
#     gateway (the mock's invoice is another id, in no parked status), so
#     it runs a second time with a second gateway whose router sends the
#     reads to the simulated ERP (invoice 5105600101 is parked there and
#     approved at once) and only Post to the supplier invoice mock, which
#     must receive at least one. The mock file has no Post function import,
#     so Prism answers it 404 NO_PATH_MATCHED.
# A table shows, per call, the operation, the status, the code, the ERP
# requests the router got for the call (to a mock, to the simulator, or
# answered by itself), and the Post requests that reached the mock.
#
# What mock mode cannot check: values as a real system fills them (keys
# the request named, statuses from a value list, amounts that match): the
# mock's data only has to fit the schemas, so business outcomes are
# expected, and only decoding is held to account.
#
# Needs Go, Node.js with npm, and curl. No fixed ports: everything listens
# on 127.0.0.1 port 0.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

mode=${1:-all}
case "$mode" in
  proxy | mock | all) ;;
  *)
    echo "usage: bash .ci/prism.sh [proxy|mock|all]" >&2
    exit 2
    ;;
esac

# 5.15 and later need Node.js 24; 5.14.2 runs on Node.js 18 and later.
PRISM_VERSION=5.14.2
specs=../shared/sapspecs
# The gateway's -erp-attempts in mock mode: the most Post requests one
# post_invoice may send.
MOCK_ATTEMPTS=3

if [ ! -d "$specs" ]; then
  echo "FAIL: SAP's published specification files are missing: no directory $specs (shared/sapspecs beside the repository)" >&2
  exit 1
fi
shopt -s nullglob
files=("$specs"/OP_API_*.json)
shopt -u nullglob
if [ ${#files[@]} -eq 0 ]; then
  echo "FAIL: no SAP API Hub OpenAPI file (OP_API_*.json) in $specs" >&2
  exit 1
fi

# $root holds the tools and one directory per mode; $tmp is the directory
# of the mode that runs (lib.sh's start_gateway writes there).
root=$(mktemp -d)
tmp=$root
. .ci/lib.sh
pids=()
# stop_all stops the gateway and every process the mode started.
stop_all() {
  stop_gateway
  gw_pid=""
  local p
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  pids=()
}
cleanup() {
  stop_all
  rm -rf "$root"
}
trap cleanup EXIT

# wait_line FILE REGEX PID: waits up to 60 s until FILE has a line matching
# REGEX (a grep -E pattern) and prints the first such line; fails when PID
# ends first.
wait_line() {
  local file=$1 re=$2 pid=$3 line _
  for _ in $(seq 1 300); do
    line=$(grep -E -m1 "$re" "$file" 2>/dev/null || true)
    if [ -n "$line" ]; then
      printf '%s\n' "$line"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

echo "--- install Prism $PRISM_VERSION"
if ! npm install --prefix "$root/prism" --no-audit --no-fund --no-save --loglevel=error \
  "@stoplight/prism-cli@$PRISM_VERSION" >"$root/npm.log" 2>&1; then
  cat "$root/npm.log" >&2
  exit 1
fi
prism="$root/prism/node_modules/.bin/prism"

echo "--- build"
go build -o "$root/erpsim" ./cmd/erpsim
go build -o "$root/erpgate" ./cmd/erpgate

# service_of FILE prints the OData service of an OpenAPI file: the last
# segment of its server URL, https://{host}:{port}/sap/opu/odata/sap/<SERVICE>.
# It fails, with the reason on stderr, for a file that is no usable
# OpenAPI 3 document.
service_of() {
  node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    if (!/^3\./.test(d.openapi || "")) throw new Error("not OpenAPI 3: openapi=" + d.openapi);
    const u = ((d.servers || [])[0] || {}).url || "";
    const m = u.match(/\/sap\/opu\/odata\/sap\/([A-Z0-9_]+)\/?$/);
    if (!m) throw new Error("no /sap/opu/odata/sap/<SERVICE> server URL: " + u);
    if (!d.paths || Object.keys(d.paths).length === 0) throw new Error("no paths");
    console.log(m[1]);' "$1"
}

# add_route JSON SERVICE VALUE prints JSON with SERVICE set to VALUE.
add_route() {
  node -e 'const r = JSON.parse(process.argv[1]); r[process.argv[2]] = process.argv[3]; console.log(JSON.stringify(r))' \
    "$1" "$2" "$3"
}

cat >"$root/router.js" <<'JS'
// Sends /sap/opu/odata/sap/<SERVICE>/rest to the Prism of SERVICE (ROUTES,
// a JSON map SERVICE -> URL) at /rest, and logs each such request with its
// answer's status on a FORWARD line.
//
// The service root and $metadata, which no OpenAPI file describes:
//   - with SIM set, they go to the simulator, as do services without a
//     Prism; each such request is logged with UNCHECKED;
//   - with METADATA set (a JSON map SERVICE -> $metadata file), the router
//     answers them itself: $metadata with the file (a METADATA line), the
//     service root with a service document and a CSRF token (a CSRF line).
//     Any other request is answered 404 and logged with UNROUTED.
// With ONLY set (a regular expression), a request of a service with a Prism
// goes there only when the rest of its path matches ONLY; the others go to
// the simulator as above.
const crypto = require("crypto");
const fs = require("fs");
const http = require("http");
const routes = JSON.parse(process.env.ROUTES);
const sim = process.env.SIM ? new URL(process.env.SIM) : null;
const metadata = process.env.METADATA ? JSON.parse(process.env.METADATA) : null;
const only = process.env.ONLY ? new RegExp(process.env.ONLY) : null;
const prefix = "/sap/opu/odata/sap/";

function answerLocally(req, res, svc, tail) {
  if (tail.startsWith("/$metadata")) {
    console.log(`METADATA ${req.method} ${req.url} (${metadata[svc]})`);
    res.writeHead(200, { "content-type": "application/xml", "dataserviceversion": "2.0" });
    res.end(fs.readFileSync(metadata[svc]));
    return;
  }
  const token = crypto.randomBytes(12).toString("base64");
  console.log(`CSRF ${req.method} ${req.url}`);
  res.writeHead(200, {
    "content-type": "application/json",
    "dataserviceversion": "2.0",
    "x-csrf-token": token,
    "set-cookie": `SAP_SESSIONID_MOCK=${crypto.randomBytes(8).toString("hex")}; path=/; HttpOnly`,
  });
  res.end(req.method === "HEAD" ? undefined : JSON.stringify({ d: { EntitySets: [] } }));
}

const server = http.createServer((req, res) => {
  let target = sim;
  let path = req.url;
  let forward = false;
  if (req.url.startsWith(prefix)) {
    const rest = req.url.slice(prefix.length);
    const cut = rest.search(/[/?]/);
    const svc = cut < 0 ? rest : rest.slice(0, cut);
    const tail = cut < 0 ? "" : rest.slice(cut);
    const root = tail === "" || tail === "/" || tail.startsWith("/?") || tail.startsWith("?");
    const described = !root && !tail.startsWith("/$metadata");
    if (routes[svc] && described && (!only || only.test(tail))) {
      target = new URL(routes[svc]);
      path = tail;
      forward = true;
    } else if (metadata && metadata[svc] && !described) {
      answerLocally(req, res, svc, tail);
      return;
    } else if (sim) {
      const why = !routes[svc] ? "no Prism for " + svc : described ? "not matched by ONLY" : "not in the OpenAPI file";
      console.log(`UNCHECKED ${req.method} ${req.url} (${why})`);
    } else {
      target = null;
    }
  } else if (sim) {
    console.log(`UNCHECKED ${req.method} ${req.url} (not an OData path)`);
  } else {
    target = null;
  }
  if (!target) {
    console.log(`UNROUTED ${req.method} ${req.url}`);
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("no route");
    return;
  }
  const headers = { ...req.headers, host: target.host };
  const up = http.request({ host: target.hostname, port: target.port, method: req.method, path, headers }, (r) => {
    if (forward) console.log(`FORWARD ${req.method} ${req.url} ${r.statusCode}`);
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on("error", (err) => {
    console.log(`ERROR ${req.method} ${req.url}: ${err.message}`);
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(String(err));
  });
  req.pipe(up);
});
server.listen(0, "127.0.0.1", () => console.log(`router listening on http://127.0.0.1:${server.address().port}`));
JS

# start_router ROUTES [VAR=VALUE...] starts the router with the routes and
# the environment given, logging to $tmp/router.log, and sets router to its
# URL.
start_router() {
  local routes=$1 line
  shift
  env ROUTES="$routes" "$@" node "$root/router.js" >"$tmp/router.log" 2>&1 &
  pids+=($!)
  if ! line=$(wait_line "$tmp/router.log" '^router listening on http://' "$!"); then
    echo "the router did not start:" >&2
    cat "$tmp/router.log" >&2
    exit 1
  fi
  router=${line#router listening on }
}

# start_prisms KIND [ARGS...] starts `prism KIND <file> ...` for each
# OpenAPI file, logging to $tmp/prism-<SERVICE>.log, and sets routes to the
# JSON map SERVICE -> URL of those that started and skipped to the files
# that did not. In ARGS, the word @SERVICE@ stands for the file's service.
start_prisms() {
  local kind=$1 f name svc log pid line url a
  shift
  routes="{}"
  skipped=()
  for f in "${files[@]}"; do
    name=$(basename "$f")
    if ! svc=$(service_of "$f" 2>"$tmp/$name.read.log"); then
      echo "!!! SKIPPED $name: not usable as an OpenAPI file: $(tail -1 "$tmp/$name.read.log")" >&2
      skipped+=("$name")
      continue
    fi
    local args=()
    for a in "$@"; do
      args+=("${a//@SERVICE@/$svc}")
    done
    log="$tmp/prism-$svc.log"
    "$prism" "$kind" "$f" "${args[@]}" --host 127.0.0.1 --port 0 >"$log" 2>&1 &
    pid=$!
    pids+=("$pid")
    if ! line=$(wait_line "$log" 'Prism is listening on http://' "$pid"); then
      echo "!!! SKIPPED $name: Prism cannot load it:" >&2
      tail -20 "$log" >&2
      skipped+=("$name")
      kill "$pid" 2>/dev/null || true
      continue
    fi
    url=$(printf '%s\n' "$line" | grep -Eo 'http://[0-9.]+:[0-9]+')
    echo "$svc: $name at $url"
    routes=$(add_route "$routes" "$svc" "$url")
  done
  if [ "$routes" = "{}" ]; then
    echo "FAIL: Prism could load none of ${files[*]}" >&2
    exit 1
  fi
}

# proxy_mode runs the golden read walk through Prism proxies in front of the
# simulated ERP; it exits 1 on any finding.
proxy_mode() {
  echo "=== PROXY mode: Prism validates the requests of the gateway and the answers of the simulator"
  tmp=$root/proxy
  mkdir -p "$tmp"

  echo "--- start erpsim"
  "$root/erpsim" -addr 127.0.0.1:0 >"$tmp/erpsim.out" 2>"$tmp/erpsim.log" &
  pids+=($!)
  local line
  if ! line=$(wait_line "$tmp/erpsim.out" '^erpsim listening on http://' "$!"); then
    echo "erpsim did not start:" >&2
    cat "$tmp/erpsim.out" "$tmp/erpsim.log" >&2
    exit 1
  fi
  local sim=${line#erpsim listening on }
  echo "simulated ERP at $sim"

  echo "--- start one Prism proxy per OpenAPI file"
  # A file Prism cannot load is skipped, and the requests of its service go
  # to the simulator unchecked.
  start_prisms proxy "$sim/sap/opu/odata/sap/@SERVICE@" --errors

  echo "--- start the router"
  start_router "$routes" SIM="$sim"

  echo "--- start erpgate against the router"
  start_gateway "$root/erpgate" -erp-url "$router" -erp-user PRISMCHECK -erp-password prism-check
  echo "erpgate at $gw_url, ERP at $router"

  echo "--- golden read walk"
  failed=0
  local i po
  for i in 1 2 3 4 5 6 7 8 9; do
    walk 200 GET "/invoices/510560010$i"
  done
  walk 404 GET /invoices/5105600199
  for po in 4500018822 4500018823 4500018830 4500018831 4500018840 4500018850 4500018860; do
    walk 200 GET "/purchase-orders/$po"
  done
  walk 404 GET /purchase-orders/4500019822
  walk 200 GET /purchase-orders/4500018822/items/10/goods-receipts
  walk 409 GET /purchase-orders/4500018822/items/20/goods-receipts # no receipt yet: GR_MISSING
  walk 200 GET /suppliers/100042
  walk 404 GET /suppliers/100999
  walk 200 GET '/suppliers?name=acme'
  walk 200 POST /invoices/5105600101/three-way-match '{}'
  walk 200 POST /invoices/5105600102/three-way-match '{}'
  walk 409 POST /invoices/5105600105/three-way-match '{}' # PO item 20 has no receipt: GR_MISSING

  echo "--- Prism's findings"
  local log svc received findings
  for log in "$tmp"/prism-*.log; do
    svc=$(basename "$log" .log)
    svc=${svc#prism-}
    received=$(grep -c 'Request received' "$log" || true)
    # Everything after Prism's start: violations are logged as errors (✖)
    # with --errors, or as warnings (⚠).
    findings=$(sed -n '/Prism is listening/,$p' "$log" | grep -E '✖|⚠|[Vv]iolation' || true)
    echo "$svc: $received requests"
    if [ -n "$findings" ]; then
      echo "FAIL $svc: Prism found requests or answers off SAP's OpenAPI file:"
      printf '%s\n' "$findings" | head -40
      sed -n '/Prism is listening/,$p' "$log" | grep -E 'VALIDATOR|sl-violations|"validation"' | head -40 || true
      failed=1
    fi
  done
  for svc in $(node -e 'console.log(Object.keys(JSON.parse(process.argv[1])).join(" "))' "$routes"); do
    if ! grep -q 'Request received' "$tmp/prism-$svc.log"; then
      echo "FAIL $svc: no request of the walk went through its Prism proxy"
      failed=1
    fi
  done
  # A request off the file must be refused, or Prism checks nothing.
  svc=API_SUPPLIERINVOICE_PROCESS_SRV
  if [ -f "$tmp/prism-$svc.log" ]; then
    local canary
    canary=$(curl -s -o "$tmp/canary" -w '%{http_code}' -u PRISMCHECK:prism-check \
      "$router/sap/opu/odata/sap/$svc/A_SupplierInvoice?%24expand=to_NoSuchNavigation" || echo 000)
    if [ "$canary" != 422 ]; then
      echo "FAIL: Prism let a request with an \$expand SAP's file does not allow through ($canary), so it validates nothing: $(head -c 300 "$tmp/canary")"
      failed=1
    else
      echo "Prism refuses a request off SAP's file (422), as it should"
    fi
  fi
  if grep -q '^ERROR' "$tmp/router.log"; then
    echo "FAIL: the router could not forward:"
    grep '^ERROR' "$tmp/router.log"
    failed=1
  fi
  if grep -q '^UNCHECKED' "$tmp/router.log"; then
    echo "--- requests no OpenAPI file could check (sent to the simulator as they were):"
    grep '^UNCHECKED' "$tmp/router.log" | sort | uniq -c
  fi
  if [ ${#skipped[@]} -gt 0 ]; then
    echo "!!! SKIPPED files (not checked at all): ${skipped[*]}"
  fi
  if [ "$failed" -ne 0 ]; then
    echo "--- erpgate log (last 50 lines)" >&2
    tail -50 "$tmp/erpgate.log" >&2
    exit 1
  fi
  echo "prism proxy: every request and answer of the walk matches SAP's OpenAPI files"
}

# walk STATUS METHOD PATH [BODY] calls the gateway and fails the proxy walk
# unless it answers STATUS.
walk() {
  local want=$1 method=$2 path=$3 body=${4:-} got
  local args=(-s -o "$tmp/answer" -w '%{http_code}' -X "$method" --max-time 30)
  if [ -n "$body" ]; then
    args+=(-H 'Content-Type: application/json' --data "$body")
  fi
  got=$(curl "${args[@]}" "$gw_url$path" || echo 000)
  if [ "$got" != "$want" ]; then
    echo "FAIL $method $path: got $got, want $want: $(head -c 600 "$tmp/answer")"
    failed=1
  else
    echo "ok   $method $path: $got"
  fi
}

# metadata_file SERVICE prints SAP's published $metadata of the service in
# $specs: OP_<SERVICE>.edmx, OP_<SERVICE>_SRV.edmx or <SERVICE>.edmx, the
# first that exists; it fails when there is none.
metadata_file() {
  local f
  for f in "$specs/OP_$1.edmx" "$specs/OP_$1_SRV.edmx" "$specs/$1.edmx"; do
    if [ -f "$f" ]; then
      printf '%s\n' "$f"
      return 0
    fi
  done
  return 1
}

# The codes a read may answer with in mock mode: business outcomes the
# mock's data can lead to (keys it did not echo, statuses and flags as the
# schema's placeholders set them, a list with one entry or none).
mock_business_codes=" INVOICE_NOT_FOUND PO_NOT_FOUND SUPPLIER_NOT_FOUND GR_MISSING PO_CLOSED DUPLICATE_INVOICE APPROVAL_MISSING "

# mock_call KIND OPERATION METHOD PATH [BODY] calls the gateway, judges its
# answer (KIND read or write, see mock_mode) and adds a row to the table.
# It sets answer_file to the file of the answer's body.
mock_call() {
  local kind=$1 op=$2 method=$3 path=$4 body=${5:-}
  local before status rid logline="" cause="" _ verdict="ok" why=""
  local seen='^(FORWARD|UNCHECKED|METADATA|CSRF|UNROUTED) '
  before=$(grep -cE "$seen" "$tmp/router.log" || true)
  calls=$((calls + 1))
  answer_file="$tmp/answer-$calls"
  local args=(-s -D "$tmp/headers-$calls" -o "$answer_file" -w '%{http_code}' -X "$method" --max-time 60)
  if [ -n "$body" ]; then
    args+=(-H 'Content-Type: application/json' --data "$body")
  fi
  if [ "$kind" = write ]; then
    args+=(-H "Idempotency-Key: prism-mock-$calls-$$")
  fi
  status=$(curl "${args[@]}" "$gw_url$path" || echo 000)
  # The router logs a request before it passes the answer on, so every
  # request of this call is in its log now: nerp counts them all (to a
  # mock, to the simulator, or answered by the router), nposts the Post
  # requests that reached the mock.
  local forwarded nerp
  forwarded=$(grep -E "$seen" "$tmp/router.log" | tail -n +"$((before + 1))" || true)
  nerp=$(printf '%s' "$forwarded" | grep -cE "$seen" || true)
  nposts=$(printf '%s' "$forwarded" | grep -cE '^FORWARD POST [^ ]*/API_SUPPLIERINVOICE_PROCESS_SRV/Post[?( ]' || true)
  printf '%s\n' "$forwarded" | sed '/^$/d; s/^/    /' >"$root/forwarded-$calls"

  # The access log line of the call, found by its request id, names the
  # cause of an error answer.
  rid=$(tr -d '\r' <"$tmp/headers-$calls" | awk 'tolower($1) == "x-request-id:" { print $2 }' | tail -1)
  if [ -n "$rid" ]; then
    for _ in $(seq 1 50); do
      logline=$(grep -F "\"request_id\":\"$rid\"" "$tmp/erpgate.log" | grep -F '"msg":"request"' | tail -1 || true)
      [ -n "$logline" ] && break
      sleep 0.1
    done
    if [ -n "$logline" ]; then
      cause=$(printf '%s' "$logline" | node -e 'let s = ""; process.stdin.on("data", (c) => s += c).on("end", () => console.log(JSON.parse(s).cause || ""))')
    fi
  fi

  # code: "-" for a success, the code of a five-field error, or why the
  # body is neither.
  local code message
  IFS=$'\t' read -r code message < <(node -e '
    const [file, status] = process.argv.slice(1);
    let b;
    try { b = JSON.parse(require("fs").readFileSync(file, "utf8")); } catch (e) { console.log("NOT_JSON\t" + e.message); process.exit(0); }
    if (/^2/.test(status)) { console.log("-\t"); process.exit(0); }
    const keys = Object.keys(b || {}).sort().join(",");
    const five = keys === "code,details,message,next_action,retryable" && typeof b.code === "string" &&
      typeof b.message === "string" && typeof b.retryable === "boolean" && typeof b.next_action === "string" &&
      b.details !== null && typeof b.details === "object" && !Array.isArray(b.details);
    console.log((five ? b.code : "NOT_FIVE_FIELD(" + keys + ")") + "\t" + String(b.message || "").replace(/\s+/g, " "));' \
    "$answer_file" "$status")

  case "$status" in
    2??) ;;
    000)
      verdict=FAIL why="no answer from the gateway"
      ;;
    *)
      if [[ $code == NOT_* ]]; then
        verdict=FAIL why="not a five-field error: $(head -c 300 "$answer_file")"
      elif [ "$code" = ERP_UNAVAILABLE ] && [[ $cause == *"answer about another "* ]]; then
        : # the mock's document has another id than the one asked for
      elif [ "$kind" = read ] && [[ $mock_business_codes != *" $code "* ]]; then
        verdict=FAIL why="$code is no business outcome of the mock's data"
      elif [ "$code" = INTERNAL ]; then
        verdict=FAIL why="INTERNAL: a fault in the gateway"
      fi
      ;;
  esac
  if [[ $cause == *malformed* ]]; then
    verdict=FAIL why="the gateway could not decode the mock's answer: $cause"
  fi
  if [ "$kind" = write ] && [ "$nposts" -gt "$MOCK_ATTEMPTS" ]; then
    verdict=FAIL why="$nposts Post requests reached the mock, more than -erp-attempts $MOCK_ATTEMPTS"
  fi
  [ "$verdict" = ok ] || failed=1
  rows+=("$(printf '%-24s %-6s %-20s %-12s %-13s %s' "$op" "$status" "$code" "$nerp" "$nposts" "$verdict")")
  notes+=("$op ($method $path): $status $code${message:+: $message}${cause:+ [cause: $cause]}${why:+ -- FAIL: $why}")
}

# mock_mode runs every read and the post of the gateway against Prism
# mocks; it exits 1 on any finding.
mock_mode() {
  echo "=== MOCK mode: the gateway decodes answers built from SAP's OpenAPI files alone"
  tmp=$root/mock
  mkdir -p "$tmp"

  echo "--- start one Prism mock per OpenAPI file (static: answers from the files' examples and schemas)"
  start_prisms mock --dynamic=false
  if [ ${#skipped[@]} -gt 0 ]; then
    echo "FAIL: Prism cannot mock ${skipped[*]}, so nothing would answer the reads of their services" >&2
    exit 1
  fi

  local metadata="{}" svc f
  for svc in $(node -e 'console.log(Object.keys(JSON.parse(process.argv[1])).join(" "))' "$routes"); do
    if ! f=$(metadata_file "$svc"); then
      echo "FAIL: no published \$metadata of $svc in $specs (OP_$svc.edmx, OP_${svc}_SRV.edmx or $svc.edmx)" >&2
      exit 1
    fi
    echo "$svc: \$metadata from $(basename "$f")"
    metadata=$(add_route "$metadata" "$svc" "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
  done

  echo "--- start the router"
  start_router "$routes" METADATA="$metadata"

  echo "--- start erpgate against the router"
  start_gateway "$root/erpgate" -erp-url "$router" -erp-user PRISMCHECK -erp-password prism-check \
    -erp-attempts "$MOCK_ATTEMPTS"
  echo "erpgate at $gw_url, ERP at $router, -erp-attempts $MOCK_ATTEMPTS"

  echo "--- every read, then request_approval and post_invoice"
  failed=0
  calls=0
  rows=()
  notes=()
  mock_call read get_invoice GET /invoices/5105600101
  mock_call read get_purchase_order GET /purchase-orders/4500018822
  mock_call read get_supplier GET /suppliers/100042
  mock_call read search_suppliers GET '/suppliers?name=acme'
  mock_call read get_goods_receipt GET /purchase-orders/4500018822/items/10/goods-receipts
  mock_call read run_three_way_match POST /invoices/5105600101/three-way-match '{}'
  mock_call read request_approval POST /invoices/5105600101/approvals \
    '{"proposed_action":"post_as_invoiced","justification":"Prism mock check of the post"}'
  local approval
  approval=$(node -e 'try { console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).approval_id || "") } catch { console.log("") }' "$answer_file")
  if [ -n "$approval" ]; then
    mock_call write post_invoice POST /invoices/5105600101/post "{\"approval_id\":\"$approval\"}"
  else
    mock_call write post_invoice POST /invoices/5105600101/post '{}'
  fi

  # The mock's invoice can never be posted: its SupplierInvoice is not the
  # id asked for (so the approval is another invoice's) and its status
  # placeholder is no parked status. So the post runs once more with the
  # reads answered by the simulated ERP, where invoice 5105600101 is parked
  # and approved at once (1000.00), and only Post sent to the mock.
  local reads_log=$tmp/erpgate.log
  stop_gateway
  gw_pid=""
  tmp=$root/mock-post
  mkdir -p "$tmp"
  echo "--- post_invoice again: reads from the simulated ERP, Post to the mock"
  "$root/erpsim" -addr 127.0.0.1:0 >"$tmp/erpsim.out" 2>"$tmp/erpsim.log" &
  pids+=($!)
  local line sim
  if ! line=$(wait_line "$tmp/erpsim.out" '^erpsim listening on http://' "$!"); then
    echo "erpsim did not start:" >&2
    cat "$tmp/erpsim.out" "$tmp/erpsim.log" >&2
    exit 1
  fi
  sim=${line#erpsim listening on }
  svc=API_SUPPLIERINVOICE_PROCESS_SRV
  start_router "$(add_route "{}" "$svc" "$(node -e 'console.log(JSON.parse(process.argv[1])[process.argv[2]])' "$routes" "$svc")")" \
    SIM="$sim" ONLY='^/Post([?(]|$)'
  start_gateway "$root/erpgate" -erp-url "$router" -erp-user PRISMCHECK -erp-password prism-check \
    -erp-attempts "$MOCK_ATTEMPTS"
  echo "erpgate at $gw_url, ERP at $router (simulated ERP at $sim), -erp-attempts $MOCK_ATTEMPTS"
  mock_call read "request_approval (sim)" POST /invoices/5105600101/approvals \
    '{"proposed_action":"post_as_invoiced","justification":"Prism mock check of the post"}'
  approval=$(node -e 'try { console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).approval_id || "") } catch { console.log("") }' "$answer_file")
  if [ -z "$approval" ]; then
    echo "FAIL: the simulated ERP's invoice 5105600101 got no approval: $(head -c 300 "$answer_file")"
    failed=1
  else
    mock_call write "post_invoice (sim)" POST /invoices/5105600101/post "{\"approval_id\":\"$approval\"}"
    if [ "$nposts" -eq 0 ]; then
      echo "FAIL: no Post of post_invoice reached the mock"
      failed=1
    fi
  fi

  echo
  printf '%-24s %-6s %-20s %-12s %-13s %s\n' operation status code "ERP requests" "Post requests" verdict
  printf '%s\n' "${rows[@]}"
  echo
  echo "--- answers"
  printf '%s\n' "${notes[@]}"
  local i
  for i in $(seq 1 "$calls"); do
    if [ -s "$root/forwarded-$i" ]; then
      echo "--- ERP requests of call $i (FORWARD: to a mock, with its status)"
      cat "$root/forwarded-$i"
    fi
  done

  # A decode failure the gateway only logs (such as a read back after a
  # post) fails the run as well.
  if cat "$reads_log" "$tmp/erpgate.log" | grep -F 'malformed' >"$tmp/malformed.log"; then
    echo "FAIL: the gateway's log has answers it could not decode:"
    head -20 "$tmp/malformed.log"
    failed=1
  fi
  local routers=("$root/mock/router.log" "$tmp/router.log")
  if cat "${routers[@]}" | grep '^ERROR' >"$tmp/router-errors.log"; then
    echo "FAIL: the router could not forward:"
    cat "$tmp/router-errors.log"
    failed=1
  fi
  if cat "${routers[@]}" | grep '^UNROUTED' >"$tmp/unrouted.log"; then
    echo "FAIL: requests nothing could answer:"
    sort "$tmp/unrouted.log" | uniq -c
    failed=1
  fi
  echo "--- answered by the router, not by a mock (the reads of the post's second run: by the simulated ERP):"
  cat "${routers[@]}" | grep -E '^(METADATA|CSRF|UNCHECKED)' | sed -E 's/\?[^ ]*//' | sort | uniq -c
  local log findings
  for log in "$root/mock"/prism-*.log; do
    findings=$(sed -n '/Prism is listening/,$p' "$log" | grep -E '✖|⚠|[Vv]iolation' || true)
    if [ -n "$findings" ]; then
      svc=$(basename "$log" .log)
      echo "--- what the mock of ${svc#prism-} reported (requests are held to the files in proxy mode):"
      printf '%s\n' "$findings" | sort | uniq -c | head -20
    fi
  done
  if [ "$failed" -ne 0 ]; then
    echo "--- erpgate logs (last 30 lines each)" >&2
    tail -30 "$reads_log" "$tmp/erpgate.log" >&2
    exit 1
  fi
  echo "prism mock: the gateway decodes every answer built from SAP's OpenAPI files, and posts within $MOCK_ATTEMPTS attempts"
}

if [ "$mode" = proxy ] || [ "$mode" = all ]; then
  proxy_mode
  stop_all
fi
if [ "$mode" = mock ] || [ "$mode" = all ]; then
  mock_mode
  stop_all
fi
