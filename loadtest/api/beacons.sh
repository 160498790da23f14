#!/usr/bin/env bash
# Open-beacon intake: durable opens per second through POST /v1/beacons/open, single (`{"delivery_id"}`) and batched
# (`{"delivery_ids": [100]}`), next to the same node's durable native publish and GET /health in the same run.
# Every delivery id is distinct and valid: seeded messages x endpoints, ids computed from the node's master key
# (base64url(message key || endpoint key || HMAC-SHA256(HMAC-SHA256(master key, "clarion delivery-id v1"), keys)[:10])),
# so each beacon is a real upsert. The opens stored are counted from the table, as the publishes are.
#
#   loadtest/api/beacons.sh                      # wrk -t2 -c64 -d10s
#   CONNECTIONS="64 256" DURATION=20s loadtest/api/beacons.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
IDS=${IDS:-400000}
. "$ROOT/loadtest/api/node.sh"
start_node clarion-beaconbench --role api
pg_port=$(sed -n 4p "$work/postgres/data/postmaster.pid")
db="postgresql://postgres:$(cat "$work/postgres.password")@127.0.0.1:$pg_port/clarion"
arn=$(bench_endpoint)
native_publish_script "$work/native.lua" "${arn##*/}" "load test"
# 1,000 endpoints x 400 messages: the (message, endpoint) pairs the ids name.
psql -qtA "$db" <<SQL
INSERT INTO endpoints (external_id, application, token)
  SELECT gen_random_uuid(), application, 'beacon-' || g FROM endpoints, generate_series(1, 1000) g WHERE token = 'bench-token';
SQL
python3 - "$work" "$db" "$IDS" <<'PY'
import base64, hashlib, hmac, subprocess, sys
work, db, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
def sql(q):
    return subprocess.run(["psql", "-qtA", db, "-c", q], capture_output=True, text=True, check=True).stdout.split()
# 400 completed messages to the bench endpoint: what the opens name.
sql("INSERT INTO messages (external_id, account, target_kind, target_id, message, state) "
    "SELECT gen_random_uuid(), a.id, 'endpoint', e.id, 'beacon bench', 'Completed' "
    "FROM accounts a, endpoints e, generate_series(1, 400) g WHERE e.token = 'bench-token' LIMIT 400")
messages = [int(x) for x in sql("SELECT id FROM messages ORDER BY id")]
endpoints = [int(x) for x in sql("SELECT id FROM endpoints WHERE token LIKE 'beacon-%' ORDER BY id")]
key = base64.b64decode(open(f"{work}/master.key").read().strip())
secret = hmac.new(key, b"clarion delivery-id v1", hashlib.sha256).digest()
def encode(m, e):
    raw = m.to_bytes(8, "big", signed=True) + e.to_bytes(8, "big", signed=True)
    raw += hmac.new(secret, raw, hashlib.sha256).digest()[:10]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
ids = [encode(m, e) for m in messages for e in endpoints][:count]
with open(f"{work}/ids.lua", "w") as f:
    f.write("ids = {" + ",".join('"%s"' % i for i in ids) + "}\n")
print(f"{len(ids)} distinct delivery ids over {len(messages)} messages x {len(endpoints)} endpoints", file=sys.stderr)
PY
cat > "$work/single.lua" <<LUA
dofile("$work/ids.lua")
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"delivery_id":"' .. ids[(n * 7919) % #ids + 1] .. '"}')
end
LUA
cat > "$work/batch.lua" <<LUA
dofile("$work/ids.lua")
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  local parts = {}
  for i = 1, 100 do n = n + 1; parts[i] = '"' .. ids[(n * 7919) % #ids + 1] .. '"' end
  return wrk.format(nil, nil, nil, '{"delivery_ids":[' .. table.concat(parts, ",") .. ']}')
end
LUA
count() { psql -qtA "$db" -c "SELECT coalesce(sum(count), 0) FROM opens"; }
messages() { psql -qtA "$db" -c "SELECT count(*) FROM messages"; }
rate() { awk -v n="$1" -v d="${DURATION%s}" 'BEGIN { printf "%.0f", n / d }'; }
echo "clarion serve --role api (release) on 127.0.0.1:$port; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $CONNECTIONS; do
  echo "== $c connections, wrk -t2 -d$DURATION"
  wrk -t2 -c"$c" -d"$DURATION" "http://127.0.0.1:$port/health" | grep -E "Requests/sec"
  m0=$(messages); wrk -t2 -c"$c" -d"$DURATION" -s "$work/native.lua" "http://127.0.0.1:$port/v1/publish" | grep -E "Requests/sec|Non-2xx"
  m1=$(messages); echo "native publish: $((m1 - m0)) messages stored, $(rate $((m1 - m0)))/s"
  o0=$(count); wrk -t2 -c"$c" -d"$DURATION" -s "$work/single.lua" "http://127.0.0.1:$port/v1/beacons/open" | grep -E "Requests/sec|Non-2xx"
  o1=$(count); echo "single beacons: $((o1 - o0)) opens stored, $(rate $((o1 - o0)))/s"
  wrk -t2 -c"$c" -d"$DURATION" -s "$work/batch.lua" "http://127.0.0.1:$port/v1/beacons/open" | grep -E "Requests/sec|Non-2xx"
  o2=$(count); echo "batched beacons (100 per request): $((o2 - o1)) opens stored, $(rate $((o2 - o1)))/s"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
