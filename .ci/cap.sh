#!/usr/bin/env bash
# erpgate against SAP's own OData implementation: SAP CAP (@sap/cds 9 with
# @cap-js-community/odata-v2-adapter) serving SAP's published $metadata
# from shared/sapspecs beside the repository, imported with `cds import`
# at test time, with the simulator's golden set as data. The test
# (cmd/erpgate/cap_test.go, build tag cap) builds CAP's project in a
# temporary directory, starts it, and compares a gateway in front of CAP
# with one in front of the simulator: every read, every three-way match,
# paging across CAP's __next links, and a post.
# Needs Go and Node.js 20 with npm; installs erp/sap/cap's packages from
# the npm registry (npm ci, from package-lock.json) into
# erp/sap/cap/node_modules, which git ignores.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

command -v node >/dev/null || { echo "node is not on PATH: SAP CAP needs Node.js 20 or later" >&2; exit 1; }
[ -f ../shared/sapspecs/API_SUPPLIERINVOICE_PROCESS_SRV.edmx ] ||
  { echo "SAP's \$metadata files are missing from ../shared/sapspecs (see its SOURCES.md)" >&2; exit 1; }

start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! npm ci --prefix erp/sap/cap --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
  cat "$log" >&2
  echo "npm ci in erp/sap/cap failed" >&2
  exit 1
fi
echo "--- SAP CAP packages installed in $(( $(date +%s) - start ))s: $(node -p "['@sap/cds','@sap/cds-dk','@cap-js/sqlite','@cap-js-community/odata-v2-adapter'].map(p => p + ' ' + require('./erp/sap/cap/node_modules/' + p + '/package.json').version).join(', ')")"

go vet -tags cap ./cmd/erpgate
go test -tags cap -count=1 -run '^TestCAP' -v ./cmd/erpgate 2>&1 | grep -v '^=== RUN'
echo "--- SAP CAP check done in $(( $(date +%s) - start ))s"
