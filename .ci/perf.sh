#!/usr/bin/env bash
# Performance harness (not part of CI): what erpgate costs against the ERP
# called directly and against nginx as a plain reverse proxy, on loopback.
# Installs nginx when missing, waits for a quiet machine, runs
# cmd/loadbench (about 5 minutes) and the hot-path Go benchmarks.
#
#   .ci/perf.sh                 full run
#   .ci/perf.sh -quick          a few seconds, only the shape of the output
#   .ci/perf.sh -profile cpu.pprof   also a CPU profile of erpgate under load
#   PERF_MAX_LOAD=1.5 PERF_WAIT_S=600 .ci/perf.sh   quiet-machine threshold and wait
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq nginx >/dev/null
fi

# Figures taken while other work loads the machine say little: wait for
# the 1-minute load average to fall below PERF_MAX_LOAD, polling every 30 s.
max_load=${PERF_MAX_LOAD:-1.5}
wait_s=${PERF_WAIT_S:-600}
waited=0
load() { cut -d' ' -f1 /proc/loadavg; }
while awk -v l="$(load)" -v m="$max_load" 'BEGIN { exit !(l >= m) }'; do
  if [ "$waited" -ge "$wait_s" ]; then
    echo "perf: load average still $(load) after ${waited}s; measuring anyway, figures will be noisy"
    break
  fi
  echo "perf: load average $(load) >= $max_load, waiting (${waited}s of ${wait_s}s)"
  sleep 30
  waited=$((waited + 30))
done
echo "perf: load average $(cut -d' ' -f1-3 /proc/loadavg) at start"

go run ./cmd/loadbench "$@"

echo
echo "--- hot-path benchmarks (go test -bench, -benchmem)"
go test -run '^$' -bench . -benchmem -count 1 ./api/ ./erp/sap/ ./errmap/ | grep -E '^(Benchmark|ok|FAIL)'
