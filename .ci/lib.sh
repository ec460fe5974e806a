# Shared by the CI scripts that run a gateway; sourced, not run. The caller
# sets $tmp, a directory it removes on exit, and calls stop_gateway then.

gw_pid=""

# start_gateway BIN ADDR SIM_ADDR [FLAG...] starts the gateway with its
# embedded simulated ERP and waits until /healthz answers. ERPGATE_*
# settings of the environment are left out: API keys or limits would change
# the outcomes the checks expect. The log goes to $tmp/erpgate.log.
start_gateway() {
  local bin=$1 addr=$2 sim_addr=$3
  shift 3
  if curl -s -o /dev/null --max-time 1 "http://$addr/healthz"; then
    echo "something already answers on $addr" >&2
    return 1
  fi
  local unset_vars=() name
  while IFS='=' read -r name _; do
    case "$name" in ERPGATE_*) unset_vars+=(-u "$name") ;; esac
  done < <(env)
  env "${unset_vars[@]}" "$bin" -addr "$addr" -sim-addr "$sim_addr" "$@" >"$tmp/erpgate.log" 2>&1 &
  gw_pid=$!
  for _ in $(seq 1 150); do
    if curl -fs -o /dev/null --max-time 1 "http://$addr/healthz"; then
      return 0
    fi
    if ! kill -0 "$gw_pid" 2>/dev/null; then
      echo "erpgate exited:" >&2
      cat "$tmp/erpgate.log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "erpgate did not answer /healthz on $addr" >&2
  tail -50 "$tmp/erpgate.log" >&2
  return 1
}

# stop_gateway stops the gateway start_gateway started, if it still runs.
stop_gateway() {
  if [ -n "$gw_pid" ] && kill -0 "$gw_pid" 2>/dev/null; then
    kill "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
  fi
}
