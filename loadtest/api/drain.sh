#!/usr/bin/env bash
# Direct publish -> delivered: how fast a node (role all, with the provider emulator) delivers a burst of direct
# publishes. wrk publishes through the native API to one FCM endpoint for PUBLISH_SECONDS; then the script waits
# until every stored message is Completed or Failed and reports messages/s from the first publish to the last
# completion, and how many were already done when publishing stopped.
#
#   loadtest/api/drain.sh                          # 3 s of publishing at 64 connections
#   BIN=/path/to/clarion PUBLISH_SECONDS=5 CONNECTIONS=16 loadtest/api/drain.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
PUBLISH_SECONDS=${PUBLISH_SECONDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
TIMEOUT=${TIMEOUT:-300}
. "$ROOT/loadtest/api/node.sh"
start_node clarion-drain --with-emulator
emulator=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/clarion.log" | grep -v ":$port\$" | head -1)
endpoint=$(python3 - "$port" "$emulator" "$KEY" "$SECRET" "$work" <<'PY'
import sys, boto3
port, emulator, key, secret, work = sys.argv[1:6]
sns = boto3.client("sns", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                   aws_access_key_id=key, aws_secret_access_key=secret)
credential = open(f"{work}/demo/fcm-service-account.json").read()
app = sns.create_platform_application(Name="drain", Platform="GCM",
                                      Attributes={"PlatformCredential": credential, "ProviderEndpoint": emulator})
arn = sns.create_platform_endpoint(PlatformApplicationArn=app["PlatformApplicationArn"], Token="drain-token")["EndpointArn"]
print(arn.rsplit("/", 1)[1])
PY
)
native_publish_script "$work/publish.lua" "$endpoint" "drain test"
pg_port=$(sed -n 4p "$work/postgres/data/postmaster.pid")
q() { psql -tA "postgresql://postgres:$(cat "$work/postgres.password")@127.0.0.1:$pg_port/clarion" -c "$1"; }
# CPU seconds (user + system) of the clarion process and of the embedded PostgreSQL's processes alive now.
cpu_seconds() {
  local ticks=0 p
  for p in "$@"; do [ -r "/proc/$p/stat" ] && ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "scale=2; $ticks / $(getconf CLK_TCK)" | bc
}
pg_pids() { local pm; pm=$(head -1 "$work/postgres/data/postmaster.pid"); echo "$pm" $(pgrep -P "$pm" || true); }
echo "clarion serve --with-emulator (release) on 127.0.0.1:$port; emulator $emulator; load $(cut -d' ' -f1-3 /proc/loadavg)"
cpu_clarion0=$(cpu_seconds $pid); cpu_pg0=$(cpu_seconds $(pg_pids))
start=$(date +%s.%N)
wrk -t2 -c"$CONNECTIONS" -d"${PUBLISH_SECONDS}s" -s "$work/publish.lua" "http://127.0.0.1:$port/v1/publish" | grep -E "requests in|Requests/sec|Non-2xx"
published=$(date +%s.%N)
total=$(q "SELECT count(*) FROM messages")
finished() { q "SELECT count(*) FROM messages WHERE state IN ('Completed', 'Failed', 'Expired')"; }
echo "stored $total messages in $(echo "$published - $start" | bc) s; finished when publishing stopped: $(finished)"
while :; do
  done_now=$(finished)
  [ "$done_now" -ge "$total" ] && break
  if [ "$(echo "$(date +%s.%N) - $start > $TIMEOUT" | bc)" = 1 ]; then echo "timeout: $done_now of $total finished"; exit 1; fi
  sleep 0.5
done
end=$(date +%s.%N)
echo "all $total finished $(echo "$end - $start" | bc) s after the first publish: $(echo "$total / ($end - $start)" | bc) messages/s end to end"
echo "CPU seconds during the run (publish + delivery): clarion $(echo "$(cpu_seconds $pid) - $cpu_clarion0" | bc), PostgreSQL $(echo "$(cpu_seconds $(pg_pids)) - $cpu_pg0" | bc) (backends alive at the end)"
q "SELECT state, count(*) FROM messages GROUP BY state ORDER BY state"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
