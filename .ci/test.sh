#!/usr/bin/env bash
# The test command: installs what the tests need from Debian when it is
# missing, then runs every Go test with the race detector.
#   gcc           the race detector needs cgo
#   redis-server  the run-state tests start a real Redis (api/runs/redistest)
#   faketime      the README walk runs once with the clock years ahead
#   curl          the README walk runs the README's curl commands
# A test whose tool is missing fails and says what to install; none skips.
# Extra arguments go to go test, e.g. bash .ci/test.sh -run README ./cmd/erpgate
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v redis-server >/dev/null || need+=(redis-server)
command -v faketime >/dev/null || need+=(faketime)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  echo "--- installing ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ $# -eq 0 ]; then
  set -- ./...
fi
go test -race -count=1 "$@"
