#!/usr/bin/env bash
# API benchmark (issue 5): durable, SigV4-signed direct SNS Publish through a running `clarion serve` (release,
# --role api, embedded PostgreSQL with default durability), next to the same server's GET /health as the ceiling.
# wrk cannot sign, so presign.py signs COUNT distinct Publish requests with botocore just before the run.
# The same run then measures the native API's durable publish (POST /v1/publish, bearer key, one endpoint target).
#
#   loadtest/api/run.sh                       # wrk -t2 -c64 -d10s
#   DURATION=20s CONNECTIONS=128 loadtest/api/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
KEY=AKIACLARIONBENCH0001
SECRET=bench-secret-0123456789abcdefghijklmnop
swift build -c release --product clarion 2>&1 | grep -E "error|warning: " || true
BIN="$ROOT/.build/release/clarion"
work=$(mktemp -d /tmp/clarion-apibench.XXXXXX); chmod 755 "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
CLARION_ACCESS_KEY_ID=$KEY CLARION_SECRET_ACCESS_KEY=$SECRET "$BIN" serve --role api --data-dir "$work" \
  --listen "127.0.0.1:$port" >"$work/clarion.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
arn=$(python3 - "$port" "$KEY" "$SECRET" <<'PY'
import sys, boto3
port, key, secret = sys.argv[1:4]
sns = boto3.client("sns", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                   aws_access_key_id=key, aws_secret_access_key=secret)
app = sns.create_platform_application(Name="bench", Platform="GCM", Attributes={"PlatformCredential": "{}"})
print(sns.create_platform_endpoint(PlatformApplicationArn=app["PlatformApplicationArn"], Token="bench-token")["EndpointArn"])
PY
)
python3 "$ROOT/loadtest/api/presign.py" "http://127.0.0.1:$port" "$KEY" "$SECRET" "$arn" 2000 "$work/publish.lua"
echo "clarion serve --role api (release) on 127.0.0.1:$port; wrk -t2 -c$CONNECTIONS -d$DURATION; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== ceiling: GET /health"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" "http://127.0.0.1:$port/health" | grep -E "Requests/sec|Latency|Non-2xx"
echo "== SigV4-signed durable Publish (direct, group commit)"
before=$(psql -tA "postgresql://postgres@127.0.0.1:$(sed -n 4p "$work/postgres/data/postmaster.pid")/clarion" -c "SELECT count(*) FROM messages")
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$work/publish.lua" "http://127.0.0.1:$port/" | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|requests in"
after=$(psql -tA "postgresql://postgres@127.0.0.1:$(sed -n 4p "$work/postgres/data/postmaster.pid")/clarion" -c "SELECT count(*) FROM messages")
echo "messages stored during the run: $((after - before))"

echo "== native API durable publish (POST /v1/publish, bearer key, direct to one endpoint)"
apikey=$("$BIN" accounts create-api-key --data-dir "$work" | sed -n 's/.*key: //p')
endpoint_id=${arn##*/}
cat > "$work/native.lua" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $apikey"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"targets":[{"endpoint":"$endpoint_id"}],"message":{"default":"load test"}}'
LUA
before=$(psql -tA "postgresql://postgres@127.0.0.1:$(sed -n 4p "$work/postgres/data/postmaster.pid")/clarion" -c "SELECT count(*) FROM messages")
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$work/native.lua" "http://127.0.0.1:$port/v1/publish" | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|requests in"
after=$(psql -tA "postgresql://postgres@127.0.0.1:$(sed -n 4p "$work/postgres/data/postmaster.pid")/clarion" -c "SELECT count(*) FROM messages")
echo "messages stored during the run: $((after - before))"
