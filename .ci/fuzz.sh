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

# fuzz_once PKG NAME: one bounded run. On a loaded machine Go's fuzzing
# engine can end a run that is still busy at its deadline with "context
# deadline exceeded" (the last seconds at 0 execs/s), with no crasher or with
# the input it was running written as one although it passes. That is the
# engine's timeout, not a finding: a written input that passes when replayed
# is removed, and the target runs once more (return 2). A written input that
# fails is a real crasher and stays.
fuzz_once() {
  local pkg=$1 name=$2 dir out before after new
  dir="$pkg/testdata/fuzz/$name"
  before=$(ls "$dir" 2>/dev/null | sort || true)
  out=$(mktemp)
  # Minimizing a new input may otherwise take a minute of the short budget.
  if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -timeout 5m "$pkg" 2>&1 | tee "$out"; then
    rm -f "$out"; return 0
  fi
  after=$(ls "$dir" 2>/dev/null | sort || true)
  new=$(comm -13 <(echo "$before") <(echo "$after") | head -1)
  if grep -q 'context deadline exceeded' "$out"; then
    if [ -z "$new" ]; then
      echo "--- fuzz $name: the engine stopped at its deadline without a finding; running again"
      rm -f "$out"; return 2
    fi
    if go test -count=1 -run "^${name}\$/^${new}\$" "$pkg" >/dev/null 2>&1; then
      echo "--- fuzz $name: the engine stopped at its deadline on $new, which passes when replayed; removed, running again"
      rm -f "$dir/$new" "$out"; return 2
    fi
  fi
  rm -f "$out"
  return 1
}

for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "--- fuzz $name ($pkg, $fuzztime)"
  rc=0; fuzz_once "$pkg" "$name" || rc=$?
  if [ "$rc" -eq 2 ]; then
    rc=0; fuzz_once "$pkg" "$name" || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    echo "$name failed; a new failing input is written to $pkg/testdata/fuzz/$name/" >&2
    exit 1
  fi
done
