#!/usr/bin/env bash
# Fuzzing: each fuzz target for a short, bounded time, one after another
# (go test -fuzz takes one target per run). Every target first replays its
# seed corpus in testdata/fuzz/<Target>/. A crasher found here is written
# to that directory by go test; commit it as a regression seed with the fix.
# FUZZTIME overrides the time per target (default 25s; about 2 minutes and a half in all).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
go version

fuzztime="${FUZZTIME:-25s}"
targets=(
  "./api FuzzDecodeRequest"
  "./erp/sap FuzzDecodeList"
  "./erp/sap FuzzParseError"
  "./erp/sap FuzzParseMessages"
  "./errmap FuzzMap"
)

for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "--- fuzz $name ($pkg, $fuzztime)"
  # Minimizing a new input may otherwise take a minute of the short budget.
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -timeout 5m "$pkg"; then
    echo "$name failed; a new failing input is written to $pkg/testdata/fuzz/$name/" >&2
    exit 1
  fi
done
