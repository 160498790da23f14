#!/usr/bin/env bash
# Huawei Push Kit fan-out (issue 19, "Batching"): deliveries/s through ProviderClient's batch path with one token per
# request, 128 (what the dispatcher's shard worker hands over at a time, submitBatchSize) and 1000 tokens per request
# (docs/providers.md E.1), against the provider emulator's Push Kit
# send route, each as a ratio of a ceiling measured in the same run: h2load replaying the same request (the same
# path, bearer token and body, with 1 token and with 1000 tokens) against the same emulator.
#
#   loadtest/hms/run.sh                          # D1=20000 one-token deliveries, DN=200000 batched deliveries
#   D1=50000 DN=500000 loadtest/hms/run.sh
#
# Builds the hmsbench product of the loadtest package (loadtest/Package.swift), release, into its own scratch path.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-hmsbench}"
D1="${D1:-20000}"
DN="${DN:-200000}"
echo "building hmsbench (release) in $SCRATCH ..." >&2
swift build -c release --package-path "$ROOT/loadtest" --scratch-path "$SCRATCH" --product hmsbench 2>&1 \
    | grep -E "error|Build complete" >&2 || true
BIN="$SCRATCH/release/hmsbench"
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }
WORK="$(mktemp -d)"
CLIENT=107000001
SECRET="bench-secret-$RANDOM"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$BIN" emulator --port "$PORT" --client-id "$CLIENT" --secret "$SECRET" > "$WORK/emulator.log" 2>&1 &
EMU=$!
trap 'kill $EMU 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do grep -q listening "$WORK/emulator.log" && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT"
TOKEN=$(curl -s --http2-prior-knowledge -X POST -H 'content-type: application/x-www-form-urlencoded' \
        --data "grant_type=client_credentials&client_id=$CLIENT&client_secret=$SECRET" "$URL/oauth2/v3/token" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')
# The body the gateway renders for the benchmark's message, with 1 and with 1000 tokens (hmsbench uses the same).
python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
for n in (1, 128, 1000):
    tokens = ["IQAAAACy0kYdAAB%08d%s" % (i, "h" * 100) for i in range(n)]
    message = {"notification": {"title": "Bench", "body": "hello from the HMS benchmark"}, "data": "{\"k\":\"v\"}",
               "android": {"notification": {"click_action": {"type": 3}}}, "token": tokens}
    open(f"{work}/body{n}.json", "w").write(json.dumps({"message": message}, separators=(",", ":")))
PY
echo "release build, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(h2load --version | head -1)"
h2() {  # requests/s of h2load with body $1, $2 requests
    h2load -n "$2" -c 1 -m 100 -d "$1" -H "authorization: Bearer $TOKEN" -H "content-type: application/json; charset=utf-8" \
        "$URL/v1/$CLIENT/messages:send" | tee -a "$WORK/h2load.log" | awk '/^finished in/ {gsub(",", "", $4); print $4}'
}
C1=$(h2 "$WORK/body1.json" "$D1")
C128=$(h2 "$WORK/body128.json" $((DN / 1000 * 4)))
CN=$(h2 "$WORK/body1000.json" $((DN / 1000)))
grep -E '^status codes' "$WORK/h2load.log" | sed 's/^/h2load /'
O1=$("$BIN" load --url "$URL" --client-id "$CLIENT" --secret "$SECRET" --tokens-per-request 1 --deliveries "$D1")
O128=$("$BIN" load --url "$URL" --client-id "$CLIENT" --secret "$SECRET" --tokens-per-request 128 --deliveries $((DN / 1000 * 512)))
ON=$("$BIN" load --url "$URL" --client-id "$CLIENT" --secret "$SECRET" --tokens-per-request 1000 --deliveries "$DN")
echo "ours  $O1"
echo "ours  $O128"
echo "ours  $ON"
R1=$(echo "$O1" | awk '{for (i=1;i<=NF;i++) if ($i=="deliveries/s") print $(i-1)}')
RN=$(echo "$ON" | awk '{for (i=1;i<=NF;i++) if ($i=="deliveries/s") print $(i-1)}')
R128=$(echo "$O128" | awk '{for (i=1;i<=NF;i++) if ($i=="deliveries/s") print $(i-1)}')
awk -v c1="$C1" -v c128="$C128" -v cn="$CN" -v r1="$R1" -v r128="$R128" -v rn="$RN" 'BEGIN {
    printf "ceiling (h2load, same emulator): 1 token/request %.0f req/s = %.0f deliveries/s; 1000 tokens/request %.1f req/s = %.0f deliveries/s\n", c1, c1, cn, cn * 1000
    printf "ceiling, 128 tokens/request (the dispatcher'"'"'s submit batch): %.1f req/s = %.0f deliveries/s\n", c128, c128 * 128
    printf "one token per request: %.0f deliveries/s = %.2f of its ceiling\n", r1, r1 / c1
    printf "128 tokens per request: %.0f deliveries/s = %.2f of its ceiling; %.1fx the one-token rate\n", r128, r128 / (c128 * 128), r128 / r1
    printf "1000 tokens per request: %.0f deliveries/s = %.2f of its ceiling; %.1fx the one-token rate\n", rn, rn / (cn * 1000), rn / r1
}'
