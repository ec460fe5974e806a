# Shared by the CI scripts that run a gateway; sourced, not run. The caller
# calls scratch NAME first (or sets $tmp, a directory it removes on exit,
# and calls stop_gateway then).

gw_pid=""
gw_url=""    # the gateway's base URL, http://127.0.0.1:PORT
gw_addr=""   # its host:port, 127.0.0.1:PORT
gw_public="" # the base URL the served contract names (-public-url, or http://localhost:PORT)
sim_url=""   # the embedded simulated ERP's base URL, http://127.0.0.1:SIMPORT

# The line the gateway prints on stdout once it listens, with the ports it
# got in place of PORT and SIMPORT:
#   erpgate listening on http://127.0.0.1:PORT (contract http://localhost:PORT/openapi.json; ERP: simulated S/4HANA at http://127.0.0.1:SIMPORT)
gw_start_line='^erpgate listening on (https?://([^ ]+)) \(contract ([^ ]+)/openapi\.json; ERP: (.+) at ([^ ]+)\)$'

# start_gateway BIN [FLAG...] starts the gateway with its embedded simulated
# ERP, both on a free port of 127.0.0.1 (port 0), reads the addresses they
# got from the gateway's start line, sets gw_url, gw_addr, gw_public and
# sim_url, and waits until /healthz answers. ERPGATE_* settings of the
# environment are left out: API keys or limits would change the outcomes the
# checks expect. The gateway's stdout goes to $tmp/erpgate.out, its stderr
# (the log) to $tmp/erpgate.log.
start_gateway() {
  local bin=$1
  shift
  gw_url="" gw_addr="" gw_public="" sim_url=""
  local unset_vars=() name
  while IFS='=' read -r name _; do
    case "$name" in ERPGATE_*) unset_vars+=(-u "$name") ;; esac
  done < <(env)
  env "${unset_vars[@]}" "$bin" -addr 127.0.0.1:0 -sim-addr 127.0.0.1:0 -data-dir "$tmp/records" "$@" \
    >"$tmp/erpgate.out" 2>"$tmp/erpgate.log" &
  gw_pid=$!
  local line="" _
  for _ in $(seq 1 150); do
    line=$(grep -m1 '^erpgate listening on ' "$tmp/erpgate.out" || true)
    [[ $line =~ $gw_start_line ]] && break
    line=""
    if ! kill -0 "$gw_pid" 2>/dev/null; then
      gateway_exited
      return 1
    fi
    sleep 0.2
  done
  if [ -z "$line" ]; then
    echo "erpgate printed no start line in 30s; its stdout:" >&2
    cat "$tmp/erpgate.out" >&2
    tail -50 "$tmp/erpgate.log" >&2
    return 1
  fi
  gw_url=${BASH_REMATCH[1]}
  gw_addr=${BASH_REMATCH[2]}
  gw_public=${BASH_REMATCH[3]}
  case "${BASH_REMATCH[4]}" in
    simulated*) sim_url=${BASH_REMATCH[5]} ;;
  esac
  for _ in $(seq 1 150); do
    if curl -fs -o /dev/null --max-time 1 "$gw_url/healthz"; then
      return 0
    fi
    if ! kill -0 "$gw_pid" 2>/dev/null; then
      gateway_exited
      return 1
    fi
    sleep 0.2
  done
  echo "erpgate did not answer /healthz at $gw_url" >&2
  tail -50 "$tmp/erpgate.log" >&2
  return 1
}

# gateway_exited reports a gateway that ended before it was ready.
gateway_exited() {
  echo "erpgate exited:" >&2
  cat "$tmp/erpgate.out" "$tmp/erpgate.log" >&2
}

# stop_gateway stops the gateway start_gateway started, if it still runs.
stop_gateway() {
  if [ -n "$gw_pid" ] && kill -0 "$gw_pid" 2>/dev/null; then
    kill "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
  fi
}

# demo_key VARIABLE prints the key of a demonstration person, as the block a
# gateway started without -api-keys prints before its start line exports
# it ("  export KELLER_KEY=<key>   # m.keller: approve, review"), from its
# log; it fails when there is none.
demo_key() {
  local key
  key=$(sed -n "s/^  export $1=\([0-9a-f]*\) .*/\1/p" "$tmp/erpgate.log" | head -1)
  [ -n "$key" ] || { echo "the gateway printed no $1" >&2; return 1; }
  printf '%s\n' "$key"
}

# scratch NAME makes $tmp, a scratch directory that goes, with the gateway,
# when the script exits, and names the script for fail.
scratch() {
  ci_name=$1
  tmp=$(mktemp -d)
  trap 'stop_gateway; rm -rf "$tmp"' EXIT
}

# fail MESSAGE says the check failed, shows the end of the gateway's log
# and exits 1.
fail() {
  echo "${ci_name:-ci}: FAIL: $*" >&2
  if [ -f "$tmp/erpgate.log" ]; then
    echo "--- erpgate log (last 30 lines)" >&2
    tail -30 "$tmp/erpgate.log" >&2
  fi
  exit 1
}
