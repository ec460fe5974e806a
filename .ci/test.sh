#!/usr/bin/env bash
# The test command: installs what the tests need from Debian when it is
# missing, then runs every Go test with the race detector.
#   gcc           the race detector needs cgo
#   redis-server  the run-state tests start a real Redis (api/runs/redistest)
#   faketime      the README walk runs once with the clock years ahead
#   curl          the README walk runs the README's curl commands
#   postgresql    the records tests run on PostgreSQL too (erp/records/recordstest):
#                 without ERPGATE_TEST_DATABASE_URL, a throwaway cluster is started
#                 on a free loopback port for the run and removed after it
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

# pg_bin_dir prints the directory of PostgreSQL's initdb and pg_ctl, if any.
pg_bin_dir() {
  local bin
  bin=$(command -v initdb 2>/dev/null) ||
    bin=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1) || true
  if [ -n "$bin" ]; then dirname "$(readlink -f "$bin")"; fi
}
if [ -z "${ERPGATE_TEST_DATABASE_URL:-}" ] && [ -z "$(pg_bin_dir)" ]; then
  need+=(postgresql)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "--- installing ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# A throwaway PostgreSQL cluster for the records tests, unless one is named.
# The server refuses to run as root, so as root it runs as the postgres user.
pg_dir=""
stop_postgres() {
  if [ -n "$pg_dir" ]; then
    as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$pg_dir"
  fi
}
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}
free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    local p
    while :; do
      p=$((20000 + RANDOM % 40000))
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
  fi
}
if [ -z "${ERPGATE_TEST_DATABASE_URL:-}" ]; then
  pg_bin=$(pg_bin_dir)
  if [ -z "$pg_bin" ]; then
    echo "initdb not found after installing postgresql" >&2
    exit 1
  fi
  if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin postgres
  fi
  # Under /tmp, not $TMPDIR: the postgres user must reach the directory.
  pg_dir=$(mktemp -d /tmp/erpgate-pg.XXXXXX)
  trap stop_postgres EXIT
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$pg_dir"; fi
  as_postgres "$pg_bin/initdb" -D "$pg_dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$pg_dir/initdb.log" 2>&1 ||
    { cat "$pg_dir/initdb.log" >&2; exit 1; }
  started=""
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    if as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $pg_dir -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null; then
      started=1
      break
    fi
  done
  if [ -z "$started" ]; then
    cat "$pg_dir/server.log" >&2
    exit 1
  fi
  echo "--- PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
  export ERPGATE_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
fi

if [ $# -eq 0 ]; then
  set -- ./...
fi
go test -race -count=1 "$@"
