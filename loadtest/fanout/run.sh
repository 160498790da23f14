#!/usr/bin/env bash
# Fan-out load test (issue 6): one command. Seeds N endpoints by COPY (half APNs, half FCM, both pointed at the
# emulator), subscribes them to one topic, publishes once, runs the dispatcher with the real provider clients
# (HTTP/2 h2c to the emulator in a separate process) and reports deliveries/s from publish to completion (the
# final checkpoint follows the last provider response), CPU and peak RSS of the gateway and of the emulator.
#
#   loadtest/fanout/run.sh                    # N=1000000, release build
#   N=100000 CONFIG=debug loadtest/fanout/run.sh
#   WORKERS=4 DATABASE_URL=postgresql://... loadtest/fanout/run.sh
#   N=100000 METRICS_COMPARE=2 loadtest/fanout/run.sh   # metrics off and on, alternated, 2 rounds each
#   APPS=1000 PER_APP=100 MAX_CONNS=512 loadtest/fanout/run.sh  # many tenants against one application (Tenants.swift)
#
# Builds the fanoutbench product of the loadtest package (loadtest/Package.swift) into its own scratch path.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-fanoutbench}"
N="${N:-1000000}"
CONFIG="${CONFIG:-release}"
WORK="$(mktemp -d /tmp/fanoutbench.XXXXXX)"
chmod 755 "$WORK"  # the embedded PostgreSQL runs as its own user
echo "building fanoutbench ($CONFIG) in $SCRATCH ..." >&2
swift build -c "$CONFIG" --package-path "$ROOT/loadtest" --scratch-path "$SCRATCH" --product fanoutbench 2>&1 \
    | grep -E "error|warning: |Build complete" >&2 || true
BIN="$SCRATCH/$CONFIG/fanoutbench"
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }

TICKS=$(getconf CLK_TCK)
EMU_PID=""
cleanup() { [ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
"$BIN" emulator "$WORK" > "$WORK/emulator.log" 2>&1 &
EMU_PID=$!
for _ in $(seq 1 1200); do [ -s "$WORK/port" ] && break; sleep 0.05; done
[ -s "$WORK/port" ] || { echo "emulator did not start" >&2; cat "$WORK/emulator.log" >&2; exit 1; }

echo "fan-out of $N endpoints ($CONFIG build, $(nproc) cores, emulator on the same machine); load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${APPS:-}" ]; then
    # Many tenants (issue 20): APPS applications x PER_APP endpoints, each application with its own APNs key, against
    # one application with as many endpoints, in the same run (Tenants.swift). The emulator made the APPS keys.
    "$BIN" run "$WORK" | tee "$WORK/run.out"
    H2LOAD=0
elif [ -n "${COUNTS_COMPARE:-}" ]; then
    # Per-application counts (schema v23, issue 17) off and on, alternated, each round a whole fan-out from a fresh
    # seed: the cost of the accounting and of the checkpoints' upsert. COUNTS_COMPARE=<rounds per mode>.
    for round in $(seq 1 "$COUNTS_COMPARE"); do
        for mode in off on; do
            echo "== round $round, application counts $mode"
            COUNTS=$mode "$BIN" run "$WORK" "$N" | tee "$WORK/run.out" | grep -E "^(deliveries/s|gateway CPU|counts|publish|worker wall)|CPU/delivery"
            echo "$mode $(awk '/^deliveries\/s/ {print $2}' "$WORK/run.out") $(awk '/gateway CPU\/delivery/ {print $(NF-1)}' "$WORK/run.out")" >> "$WORK/compare"
        done
    done
    awk '{ n[$1]++; d[$1] += $2; c[$1] += $3 } END {
        printf "counts off           mean %.0f deliveries/s, %.2f µs CPU/delivery over %d rounds\n", d["off"]/n["off"], c["off"]/n["off"], n["off"];
        printf "counts on            mean %.0f deliveries/s, %.2f µs CPU/delivery over %d rounds\n", d["on"]/n["on"], c["on"]/n["on"], n["on"];
        printf "ratio on/off         %.3f deliveries/s, %.3f CPU/delivery\n", (d["on"]/n["on"]) / (d["off"]/n["off"]), (c["on"]/n["on"]) / (c["off"]/n["off"]) }' "$WORK/compare"
    H2LOAD=0
elif [ -n "${METRICS_COMPARE:-}" ]; then
    # Metrics on and off in one run (issue 17): alternate the modes so drift in the machine's load hits both;
    # each round is a whole fan-out from a fresh seed. METRICS_COMPARE=<rounds per mode>.
    for round in $(seq 1 "$METRICS_COMPARE"); do
        for mode in off on; do
            echo "== round $round, metrics $mode"
            METRICS=$mode "$BIN" run "$WORK" "$N" | tee "$WORK/run.out" | grep -E "^(deliveries/s|gateway CPU|metrics|publish)|CPU/delivery"
            echo "$mode $(awk '/^deliveries\/s/ {print $2}' "$WORK/run.out") $(awk '/gateway CPU\/delivery/ {print $(NF-1)}' "$WORK/run.out")" >> "$WORK/compare"
        done
    done
    awk '{ n[$1]++; d[$1] += $2; c[$1] += $3 } END {
        printf "metrics off          mean %.0f deliveries/s, %.2f µs CPU/delivery over %d rounds\n", d["off"]/n["off"], c["off"]/n["off"], n["off"];
        printf "metrics on           mean %.0f deliveries/s, %.2f µs CPU/delivery over %d rounds\n", d["on"]/n["on"], c["on"]/n["on"], n["on"];
        printf "ratio on/off         %.3f deliveries/s, %.3f CPU/delivery\n", (d["on"]/n["on"]) / (d["off"]/n["off"]), (c["on"]/n["on"]) / (c["off"]/n["off"]) }' "$WORK/compare"
    H2LOAD=0
else
"$BIN" run "$WORK" "$N" | tee "$WORK/run.out"
fi
echo "load average after   $(cut -d' ' -f1-3 /proc/loadavg)"
# The emulator's own cost (separate process): CPU ticks and peak RSS from /proc.
read -r UTIME STIME < <(awk '{print $14, $15}' "/proc/$EMU_PID/stat")
HWM=$(awk '/VmHWM/ {print $2}' "/proc/$EMU_PID/status")
echo "emulator CPU         $(awk -v u="$UTIME" -v s="$STIME" -v t="$TICKS" 'BEGIN {printf "%.1f", (u+s)/t}') s (whole run)"
echo "emulator peak RSS    $((HWM / 1024)) MB"

# The ceiling: h2load against the same emulator process, with the requests the gateway sent (bodies, headers, JWT /
# access token written by the run), the same mix (N/2 APNs + N/2 FCM, run at once) and the same connections per
# pool; streams per connection as the emulator grants them (APNs 1000 after the token, FCM 100). The ratio is
# the gateway's deliveries/s over the N requests' rate through h2load.
if [ "${H2LOAD:-1}" = 1 ] && command -v h2load >/dev/null && [ -s "$WORK/h2load-apns.args" ] && [ -s "$WORK/h2load-fcm.args" ]; then
    half=$(( (N + 1) / 2 ))
    h2run() {  # name count
        local args=() line url
        { read -r url; while IFS= read -r line || [ -n "$line" ]; do args+=(-H "$line"); done; } < "$WORK/h2load-$1.args"
        h2load -n "$2" -c "$(cat "$WORK/h2load-$1.conns")" -m 1000 -d "$WORK/h2load-$1.body" "${args[@]}" "$url" \
            > "$WORK/h2load-$1.out" 2>&1
    }
    read -r U0 S0 < <(awk '{print $14, $15}' "/proc/$EMU_PID/stat")
    START=$(date +%s.%N)
    h2run apns "$half" & A=$!
    h2run fcm $(( N - half )) & F=$!
    wait $A $F || true
    END=$(date +%s.%N)
    read -r U1 S1 < <(awk '{print $14, $15}' "/proc/$EMU_PID/stat")
    for p in apns fcm; do
        echo "h2load $p   $(grep -E "^finished in" "$WORK/h2load-$p.out" | cut -d, -f1-2); $(grep -E "^requests:" "$WORK/h2load-$p.out")"
    done
    DPS=$(awk '/^deliveries\/s/ {print $2}' "$WORK/run.out")
    awk -v n="$N" -v s="$START" -v e="$END" -v d="$DPS" -v cpu="$(( U1 + S1 - U0 - S0 ))" -v t="$TICKS" 'BEGIN {
        r = n / (e - s);
        printf "h2load ceiling       %d requests in %.2f s = %.0f req/s (both at once); emulator CPU %.1f s\n", n, e - s, r, cpu / t;
        printf "ratio                %.2f (gateway deliveries/s %s / h2load req/s %.0f)\n", d / r, d, r }'
    echo "load average end     $(cut -d' ' -f1-3 /proc/loadavg)"
else
    echo "h2load ceiling       not measured (H2LOAD=0, no h2load, or no request written by the run)"
fi
