#!/usr/bin/env bash
# Validates deploy/ without Docker, a cluster or network beyond the package
# registries:
#   - Kubernetes: kustomize builds both overlays; kubeconform -strict checks
#     every object against JSON schemas generated here from the API's Go
#     types (deploy/tools/k8sschemas: k8s.io/api for Kubernetes 1.30 and the
#     prometheus-operator monitoring/v1 types for ServiceMonitor), because
#     the upstream schema repositories are not reachable from CI. With
#     KUBECONFORM_UPSTREAM=1 (a machine with internet) the overlays are also
#     checked against the upstream schemas.
#   - Prometheus: promtool checks the rules, runs their unit tests, checks
#     the compose config, and lints a live /metrics of the gateway after a
#     few golden calls; every erpgate_* metric the alerts and the dashboard
#     use must be one the gateway defines.
#   - Grafana: the dashboard JSON parses and keeps its uid, variable and
#     datasource references.
#     The rendered overlays keep the records right: production takes
#     ERPGATE_DATABASE_URL from the Secret, no ConfigMap holds a database URL
#     or password, the demo keeps SQLite on an emptyDir, and the Deployment
#     mounts a writable volume at ERPGATE_DATA_DIR.
#   - The gateway: /readyz reports its SQLite store ok.
#   - Compose: deploy/compose.yaml loads with compose-go (what `docker compose
#     config` uses) and its build and bind-mount paths exist; the gateway
#     uses the postgres service (healthy first) for its records, and sends
#     its traces to the collector, whose pipeline (deploy/otel) ends in
#     Jaeger.
#   - Dockerfile: BuildKit's parser and parse-time lint rules, and the image's
#     promises (static build, distroless nonroot, USER 65532, port 8080, ENV,
#     the records VOLUME owned by 65532, no HEALTHCHECK, .dockerignore), via
#     deploy/tools/dockerfilecheck.
# Run from anywhere: bash .ci/deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PATH="/usr/local/go/bin:$PATH"

KUSTOMIZE_VERSION=v5.8.2   # v5.8.3 needs Go 1.27
KUBECONFORM_VERSION=v0.8.0
K8S_VERSION=1.30.0         # keep in step with k8s.io/api in deploy/tools/go.mod

# shellcheck source=lib.sh
source .ci/lib.sh
tmp=$(mktemp -d)
cleanup() {
  stop_gateway
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/bin"
export GOBIN="$tmp/bin"
export PATH="$tmp/bin:$PATH"

fail() { echo "deploy.sh: FAIL: $*" >&2; exit 1; }
step() { echo "--- deploy: $*"; }

step "tools"
if ! command -v promtool >/dev/null; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version 2>&1 | head -1
# Build the Go tools concurrently (two cores); each logs to its own file.
pids=()
go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >"$tmp/kustomize.log" 2>&1 & pids+=($!)
go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION" >"$tmp/kubeconform.log" 2>&1 & pids+=($!)
(cd deploy/tools && go build -o "$tmp/bin/" ./k8sschemas ./composecheck ./dockerfilecheck && go vet ./...) >"$tmp/tools.log" 2>&1 & pids+=($!)
go build -o "$tmp/bin/erpgate" ./cmd/erpgate >"$tmp/erpgate-build.log" 2>&1 & pids+=($!)
for p in "${pids[@]}"; do
  if ! wait "$p"; then
    cat "$tmp"/*.log >&2
    fail "building the tools"
  fi
done
echo "kustomize $(kustomize version), kubeconform $KUBECONFORM_VERSION"

step "kubernetes schemas (Kubernetes $K8S_VERSION, from Go types)"
k8sschemas -out "$tmp/schemas"

for overlay in demo production; do
  step "kustomize build deploy/k8s/overlays/$overlay | kubeconform -strict"
  kustomize build "deploy/k8s/overlays/$overlay" >"$tmp/$overlay.yaml"
  kubeconform -strict -summary -kubernetes-version "$K8S_VERSION" \
    -schema-location "$tmp/schemas/{{.ResourceKind}}{{.KindSuffix}}.json" \
    "$tmp/$overlay.yaml"
  if [ "${KUBECONFORM_UPSTREAM:-}" = 1 ]; then
    kubeconform -strict -summary -kubernetes-version "$K8S_VERSION" -schema-location default \
      -schema-location 'https://raw.githubusercontent.com/datreeio/CRDs-catalog/main/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json' \
      "$tmp/$overlay.yaml"
  fi
done

# What each overlay must (not) contain, on the rendered YAML.
kinds() { grep -E '^kind: ' "$1" | sed 's/^kind: //' | sort | tr '\n' ' '; }
demo_kinds=$(kinds "$tmp/demo.yaml")
prod_kinds=$(kinds "$tmp/production.yaml")
echo "demo: $demo_kinds"
echo "production: $prod_kinds"
[ "$demo_kinds" = "ConfigMap Deployment Deployment Namespace Secret Service Service " ] ||
  fail "demo overlay renders unexpected kinds: $demo_kinds"
[ "$prod_kinds" = "ConfigMap Deployment HorizontalPodAutoscaler PodDisruptionBudget Service ServiceMonitor " ] ||
  fail "production overlay renders unexpected kinds: $prod_kinds"
grep -q 'ERPGATE_ERP_URL' "$tmp/demo.yaml" && fail "demo overlay must not set ERPGATE_ERP_URL (it uses the embedded simulator)"
grep -q 'ERPGATE_ERP_URL: https://' "$tmp/production.yaml" || fail "production overlay lacks ERPGATE_ERP_URL"
grep -q 'image: redis' "$tmp/production.yaml" && fail "production overlay must not run Redis"
grep -q '^  replicas: 3$' "$tmp/production.yaml" || fail "production overlay must run 3 replicas"
grep -q '^  minReplicas: 3$' "$tmp/production.yaml" || fail "production HPA must keep 3 replicas"
# The records: production reads ERPGATE_DATABASE_URL from the Secret (never a
# ConfigMap), the demo keeps SQLite on an emptyDir at /var/lib/erpgate, and
# either Deployment mounts a writable volume at ERPGATE_DATA_DIR (the root
# filesystem is read-only; the image's ENV is the default).
python3 - "$tmp/demo.yaml" "$tmp/production.yaml" deploy/Dockerfile <<'PY' || fail "the overlays' records database settings"
import re, sys, yaml
demo_file, prod_file, dockerfile = sys.argv[1:]
m = re.search(r"^\s*(?:ENV\s+)?ERPGATE_DATA_DIR=(\S+)", open(dockerfile).read(), re.M)
assert m, "deploy/Dockerfile sets no ENV ERPGATE_DATA_DIR"
image_data_dir = m.group(1)

def check(name, path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    configmaps = {d["metadata"]["name"]: d.get("data") or {} for d in docs if d["kind"] == "ConfigMap"}
    for cm, data in configmaps.items():
        for k, v in data.items():
            assert not re.search(r"database[-_]url|password", k, re.I), f"{name}: ConfigMap {cm} has key {k}"
            assert not re.search(r"postgres(ql)?://", str(v), re.I), f"{name}: ConfigMap {cm} has a database URL in {k}"
    dep = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "erpgate")
    pod = dep["spec"]["template"]["spec"]
    c = next(c for c in pod["containers"] if c["name"] == "erpgate")
    env = {e["name"]: e for e in c.get("env", [])}
    from_cm = {}
    for ef in c.get("envFrom", []):
        if "configMapRef" in ef:
            from_cm.update(configmaps[ef["configMapRef"]["name"]])
    data_dir = env["ERPGATE_DATA_DIR"].get("value") if "ERPGATE_DATA_DIR" in env else from_cm.get("ERPGATE_DATA_DIR", image_data_dir)
    mounts = [vm for vm in c.get("volumeMounts", []) if vm["mountPath"].rstrip("/") == data_dir.rstrip("/")]
    assert len(mounts) == 1, f"{name}: no (single) volumeMount at ERPGATE_DATA_DIR {data_dir}"
    assert not mounts[0].get("readOnly"), f"{name}: the volume at {data_dir} is read-only"
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    assert mounts[0]["name"] in volumes, f"{name}: volumeMount {mounts[0]['name']} has no volume"
    return data_dir, env, from_cm, volumes[mounts[0]["name"]]

data_dir, env, from_cm, vol = check("production", prod_file)
ref = env.get("ERPGATE_DATABASE_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
assert ref.get("name") == "erpgate-secrets" and ref.get("key") == "database-url" and not ref.get("optional"), \
    f"production: ERPGATE_DATABASE_URL is not from secretKeyRef erpgate-secrets/database-url: {env.get('ERPGATE_DATABASE_URL')}"
assert "ERPGATE_DATABASE_URL" not in from_cm, "production: ERPGATE_DATABASE_URL in a ConfigMap"
print(f"production: ERPGATE_DATABASE_URL from secretKeyRef erpgate-secrets/database-url; volume at {data_dir}")

data_dir, env, from_cm, vol = check("demo", demo_file)
assert data_dir == "/var/lib/erpgate", f"demo: ERPGATE_DATA_DIR is {data_dir}"
assert "emptyDir" in vol, f"demo: the volume at {data_dir} is not an emptyDir: {vol}"
assert "ERPGATE_DATABASE_URL" not in env and "ERPGATE_DATABASE_URL" not in from_cm, "demo: sets ERPGATE_DATABASE_URL (it uses SQLite)"
print(f"demo: SQLite on emptyDir {vol['name']} at {data_dir}")
PY

step "promtool: rules, rule unit tests, compose prometheus.yml"
promtool check rules deploy/prometheus/alerts.yaml
promtool test rules deploy/prometheus/alerts_test.yaml
promtool check config deploy/prometheus/prometheus.yml

step "live /metrics of the gateway"
start_gateway "$tmp/bin/erpgate" -log-level warn || fail "the gateway did not start"
echo "erpgate at $gw_url, simulated ERP at $sim_url"
# call METHOD PATH WANT_STATUS [BODY [HEADER]]
call() {
  local args=(-s --max-time 15 -o "$tmp/body" -w '%{http_code}' -X "$1" "$gw_url$2")
  [ -n "${4:-}" ] && args+=(-H 'Content-Type: application/json' -d "$4")
  [ -n "${5:-}" ] && args+=(-H "$5")
  local got
  got=$(curl "${args[@]}") || true
  [ "$got" = "$3" ] || { cat "$tmp/body" >&2; echo >&2; fail "$1 $2: status $got, want $3"; }
}
call GET /readyz 200
grep -qF '"store":{"engine":"sqlite","status":"ok"}' "$tmp/body" ||
  { cat "$tmp/body" >&2; echo >&2; fail "/readyz does not report the SQLite store ok"; }
call GET /invoices/5105600101 200
call GET /invoices/5105600999 404
call POST /invoices/5105600101/three-way-match 200
call POST /invoices/5105600105/three-way-match 409
call POST /invoices/5105600101/approvals 200 '{"proposed_action":"post_as_invoiced","justification":"Three-way match MATCHED on all lines."}'
call POST /invoices/5105600101/post 200 '{"approval_id":"A0000001"}'
call GET '/suppliers?name=acme' 200
# recheck_at must lie in the future (and within a year): a day from now.
recheck_at=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
call POST /invoices/5105600105/hold 200 '{"reason":"No goods receipt yet for PO 4500018822 item 20","recheck_at":"'"$recheck_at"'"}'
grep -qF "\"recheck_at\":\"$recheck_at\"" "$tmp/body" || { cat "$tmp/body" >&2; echo >&2; fail "the hold does not echo recheck_at $recheck_at"; }
ho='{"invoice_id":"5105600104","code":"SUPPLIER_NOT_FOUND","summary":"Invoicing party 100999 is not in the supplier master."}'
call POST /handovers 200 "$ho" 'Idempotency-Key: deploy-ci-1'
call POST /handovers 200 "$ho" 'Idempotency-Key: deploy-ci-1'
call POST /invoices/5105600103/three-way-match 404 '' 'X-Run-Id: deploy-ci-run'
call POST /invoices/5105600103/three-way-match 409 '' 'X-Run-Id: deploy-ci-run'
curl -fs --max-time 15 "$gw_url/metrics" >"$tmp/metrics.txt" || fail "GET /metrics failed"
lint=$(promtool check metrics <"$tmp/metrics.txt" 2>&1) || true
if [ -n "$lint" ]; then
  echo "$lint" >&2
  fail "promtool check metrics found problems in the gateway's /metrics"
fi
echo "promtool check metrics: no problems ($(grep -c '^erpgate_' "$tmp/metrics.txt") erpgate samples)"

# Every erpgate_* metric the alerts and the dashboard name is one the
# gateway defines (api/*.go), and the always-registered ones are exposed.
used=$(grep -ohE 'erpgate_[a-z_]+' deploy/prometheus/alerts.yaml deploy/grafana/dashboards/erpgate.json | sort -u)
for m in $used; do
  base=$(echo "$m" | sed -E 's/_(bucket|sum|count)$//')
  grep -rqs --include='*.go' --exclude='*_test.go' "Name: *\"${base#erpgate_}\"" api ||
    fail "$m is used by the alerts or the dashboard but no collector in api/ defines it"
done
for m in erpgate_outcomes_total erpgate_http_requests_total erpgate_request_duration_seconds_bucket \
  erpgate_erp_attempts_total erpgate_erp_breaker_state erpgate_limits_triggered_total \
  erpgate_handovers_total erpgate_holds_total erpgate_idempotent_replays_total; do
  grep -q "^$m[{ ]" "$tmp/metrics.txt" || fail "/metrics lacks $m"
done
echo "metrics used by alerts and dashboard: $(echo $used | wc -w), all defined"

step "grafana dashboard"
dash=deploy/grafana/dashboards/erpgate.json
jq -e . "$dash" >/dev/null || fail "$dash is not JSON"
jq -e '.uid == "erpgate" and .schemaVersion >= 36
  and ([.templating.list[] | select(.name == "datasource" and .type == "datasource" and .query == "prometheus")] | length == 1)
  and ([.panels[] | select(.type != "row") | .datasource.uid] | all(. == "${datasource}"))
  and ([.panels[] | select(.type != "row") | .targets[] | .datasource.uid] | all(. == "${datasource}"))
  and ([.panels[].id] | length == (unique | length))' "$dash" >/dev/null ||
  fail "$dash: uid erpgate, a \${datasource} variable used by every panel and query, unique panel ids"
# The provisioning files parse, and point where compose.yaml mounts things.
python3 - <<'PY' || fail "grafana provisioning does not match deploy/compose.yaml"
import yaml
ds = yaml.safe_load(open("deploy/grafana/provisioning/datasources/prometheus.yaml"))
pr = yaml.safe_load(open("deploy/grafana/provisioning/dashboards/erpgate.yaml"))
compose = yaml.safe_load(open("deploy/compose.yaml"))
assert ds["apiVersion"] == 1 and pr["apiVersion"] == 1
assert [d["type"] for d in ds["datasources"]] == ["prometheus"], ds
assert ds["datasources"][0]["url"] == "http://prometheus:9090", ds
mounts = compose["services"]["grafana"]["volumes"]
assert "./grafana/dashboards:%s:ro" % pr["providers"][0]["options"]["path"] in mounts, mounts
assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in mounts, mounts
PY
echo "$dash: $(jq '[.panels[] | select(.type != "row")] | length' "$dash") panels"

step "compose"
composecheck deploy/compose.yaml
# The gateway keeps its records in the compose PostgreSQL and waits for it.
python3 - <<'PY' || fail "deploy/compose.yaml: the postgres service and the gateway's ERPGATE_DATABASE_URL"
import yaml
compose = yaml.safe_load(open("deploy/compose.yaml"))
svc = compose["services"]
pg, gw = svc["postgres"], svc["erpgate"]
assert pg["image"] == "postgres:16", pg["image"]
assert "pg_isready" in pg["healthcheck"]["test"], pg["healthcheck"]
vol = [v.split(":")[0] for v in pg["volumes"] if v.split(":")[1] == "/var/lib/postgresql/data"]
assert vol and vol[0] in compose["volumes"], pg["volumes"]
assert gw["environment"]["ERPGATE_DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in gw["environment"]["ERPGATE_DATABASE_URL"], gw["environment"]
assert gw["depends_on"]["postgres"]["condition"] == "service_healthy", gw["depends_on"]
assert gw["environment"]["ERPGATE_REDIS_URL"].startswith("redis://redis:"), gw["environment"]
PY
# The gateway's traces reach the collector's OTLP/HTTP receiver, and the
# collector's pipeline sends them on to Jaeger's OTLP port.
python3 - <<'PY' || fail "deploy/compose.yaml and deploy/otel/collector.yaml: the gateway's traces do not reach Jaeger"
import yaml
from urllib.parse import urlparse
compose = yaml.safe_load(open("deploy/compose.yaml"))
svc = compose["services"]
gw, col, jaeger = svc["erpgate"], svc["otel-collector"], svc["jaeger"]
ep = urlparse(gw["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"])
assert ep.scheme == "http" and ep.hostname == "otel-collector", ep
mounts = dict(v.split(":")[:2] for v in col["volumes"])
assert mounts["./otel/collector.yaml"] in " ".join(col["command"]), (mounts, col["command"])
cfg = yaml.safe_load(open("deploy/otel/collector.yaml"))
http = cfg["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
assert http.endswith(":%d" % ep.port), (http, ep.port)
pipe = cfg["service"]["pipelines"]["traces"]
for kind in ("receivers", "processors", "exporters"):
    for name in pipe[kind]:
        assert name in cfg[kind], f"pipeline {kind} {name} is not defined"
for name in pipe["exporters"]:
    host = cfg["exporters"][name]["endpoint"].split(":")[0]
    assert host in svc, f"exporter {name} sends to {host}, no compose service"
assert "16686:16686" in jaeger["ports"], jaeger["ports"]
assert gw["depends_on"]["otel-collector"], gw["depends_on"]
print(f"traces: erpgate -> {ep.hostname}:{ep.port} -> {', '.join(cfg['exporters'][n]['endpoint'] for n in pipe['exporters'])}")
PY

step "dockerfile"
dockerfilecheck deploy/Dockerfile

echo "--- deploy: all checks passed"
