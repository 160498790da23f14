#!/usr/bin/env bash
# Measures the API server's ceiling with wrk: GET /health (synchronous handler on the loop thread), POST to an
# asynchronous and a suspending echo route (connection suspended, answered from a Task / at once), and an
# unauthenticated SNS Publish through the Query layer (form decoding, dispatch, XML).
#
#   loadtest/api/bench.sh            # 5 s per run, wrk -t2 -c64
#   DURATION=10s CONNECTIONS=128 loadtest/api/bench.sh
#
# The server is the debug build of the test target (the project builds debug only on the shared 2-core
# machine); wrk and the server share those cores, as in docs' other measurements.
set -euo pipefail
cd "$(dirname "$0")/../.."
SCRATCH=${SCRATCH:-.build-api}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
here=$(mktemp -d)
trap 'touch "$here/port.stop"; rm -rf "$here"' EXIT

swift build --scratch-path "$SCRATCH" --build-tests >/dev/null
CLARION_API_BENCH_PORT_FILE="$here/port" CLARION_API_BENCH_THREADS=$THREADS \
  swift test --skip-build --scratch-path "$SCRATCH" --filter "BenchmarkServer" >"$here/server.log" 2>&1 &
server=$!
for _ in $(seq 1 300); do [ -s "$here/port" ] && break; sleep 0.1; done
port=$(cat "$here/port")
echo "server on 127.0.0.1:$port (loop threads: $THREADS)"

cat >"$here/echo.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.rep("x", 180)
LUA
cat >"$here/publish.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
wrk.body = "Action=Publish&Version=2010-03-31&TargetArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3Aendpoint%2FAPNS%2Fapp%2F1"
  .. "&Message=%7B%22default%22%3A%22hello%22%7D&MessageStructure=json"
  .. "&MessageAttributes.entry.1.Name=AWS.SNS.MOBILE.APNS.PRIORITY&MessageAttributes.entry.1.Value.DataType=String"
  .. "&MessageAttributes.entry.1.Value.StringValue=10"
LUA

run() {
  local label=$1; shift
  local out
  out=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$@")
  printf '%-34s %10s req/s   p50 %-8s p99 %s\n' "$label" \
    "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" \
    "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
    "$(awk '$1 == "99%" {print $2}' <<<"$out")"
  grep -E "Non-2xx|Socket errors" <<<"$out" || true
}

run "GET /health (sync)" "http://127.0.0.1:$port/health"
run "POST /v1/echo (async Task)" -s "$here/echo.lua" "http://127.0.0.1:$port/v1/echo"
run "POST /v1/echo-suspending" -s "$here/echo.lua" "http://127.0.0.1:$port/v1/echo-suspending"
run "POST / Action=Publish (no auth)" -s "$here/publish.lua" "http://127.0.0.1:$port/"

touch "$here/port.stop"
wait "$server" || { echo "server exited with an error:"; tail -20 "$here/server.log"; exit 1; }
