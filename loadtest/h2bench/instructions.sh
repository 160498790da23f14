#!/usr/bin/env bash
# Instructions per request under callgrind: steady and independent of what else runs on the machine (see README.md,
# "Measuring on a shared machine"). Uses the h2bench binary and inputs of run.sh (built here with BUILD_ONLY=1).
#
#   loadtest/h2bench/instructions.sh client SERVER SCHEME [STREAMS] [--full-responses]
#       our client (1 connection) under callgrind against SERVER (nghttpd | emulator | static) over SCHEME
#       (http | https): (I(60k) - I(20k)) / 40k, so start-up (loading the CA store, the handshake) cancels out
#   loadtest/h2bench/instructions.sh h2load SERVER SCHEME [STREAMS]
#       the same for h2load
#   loadtest/h2bench/instructions.sh server SERVER SCHEME [STREAMS] [h2load | ours]
#       SERVER under callgrind, 5k requests to warm up, then counting zeroed (callgrind_control -z), 20k requests
#       from the client (default h2load), dumped (-d) and divided by 20k
#
# STREAMS defaults to 100, CONNECTIONS (environment, server mode) to 1. Each measurement starts its own server on a free port and stops it (by its pid).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MODE=${1:?client|h2load|server}; SERVER=${2:?nghttpd|emulator|static}; SCHEME=${3:?http|https}; STREAMS=${4:-100}
EXTRA=${5:-}
BIN=$(BUILD_ONLY=1 "$ROOT/loadtest/h2bench/run.sh" 2>/dev/null | tail -1)
WORK="${SCRATCH:-$ROOT/.build-h2bench}/work"
OUT=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
wait_accepting() {
    for _ in $(seq 100); do
        python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.5).close()' "$1" 2>/dev/null && return 0
        sleep 0.2
    done
    echo "server on port $1 did not come up" >&2; exit 1
}
# server_command NAME PORT: the command line of a server (as run.sh starts it).
server_command() {
    local tls=()
    [ "$SCHEME" = https ] && tls=(--tls "$WORK/certs")
    case "$1" in
        emulator) echo "$BIN" emulator --config "$WORK/apns/emulator.json" --port "$2" "${tls[@]}" ;;
        static) echo "$BIN" serve --port "$2" --max-streams 1000 "${tls[@]}" ;;
        nghttpd) if [ "$SCHEME" = https ]; then
                     echo nghttpd --address=127.0.0.1 -m 1000 -d "$WORK/htdocs" "$2" "$WORK/certs/key.pem" "$WORK/certs/cert.pem"
                 else
                     echo nghttpd --address=127.0.0.1 --no-tls -m 1000 -d "$WORK/htdocs" "$2"
                 fi ;;
        *) echo "unknown server $1" >&2; exit 2 ;;
    esac
}
TOKEN=$(printf 'ab%.0s' {1..32})
AUTHORIZATION="$(cat "$WORK/apns/authorization")"
# client_run KIND URL N [wrapper...]: one client run of N requests, the same requests as the grid.
client_run() {
    local kind=$1 url=$2 n=$3; shift 3
    if [ "$kind" = ours ]; then
        local ca=()
        [ "$SCHEME" = https ] && ca=(--ca "$WORK/certs/cert.pem")
        "$@" "$BIN" load --url "$url" --connections "${CONNECTIONS:-1}" --streams "$STREAMS" --requests "$n" --body-bytes 200 \
            --header "$AUTHORIZATION" --header "apns-topic: com.example.bench" --header "apns-push-type: alert" \
            --header "apns-priority: 10" "${ca[@]}" $EXTRA | head -1
    else
        "$@" h2load -n "$n" -c "${CONNECTIONS:-1}" -m "$STREAMS" -d "$WORK/body.json" -H "content-type: application/json" \
            -H "$AUTHORIZATION" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" -H "apns-priority: 10" \
            "$url" | grep -E "^status codes"
    fi
}
collected() { grep -o "Collected : [0-9]*" "$1" | awk '{ print $3 }'; }

port=$(free_port)
URL="$SCHEME://127.0.0.1:$port/3/device/$TOKEN"
case "$MODE" in
    client|h2load)
        read -ra command <<< "$(server_command "$SERVER" "$port")"
        "${command[@]}" > "$OUT/server.log" 2>&1 & PIDS+=($!)
        wait_accepting "$port"
        kind=ours; [ "$MODE" = h2load ] && kind=h2load
        for n in 20000 60000; do
            client_run "$kind" "$URL" "$n" valgrind --tool=callgrind --callgrind-out-file="$OUT/client.$n" 2> "$OUT/vg.$n" >&2
        done
        a=$(collected "$OUT/vg.20000"); b=$(collected "$OUT/vg.60000")
        echo "$MODE -> $SERVER $SCHEME 1 x $STREAMS $EXTRA: $(( (b - a) / 40000 )) instructions per request (steady)"
        ;;
    server)
        client=${EXTRA:-h2load}; EXTRA=""
        read -ra command <<< "$(server_command "$SERVER" "$port")"
        valgrind --tool=callgrind --callgrind-out-file="$OUT/server" "${command[@]}" > "$OUT/server.log" 2>&1 & PIDS+=($!)
        wait_accepting "$port"
        client_run "$client" "$URL" 5000 >&2
        callgrind_control -z "${PIDS[0]}" > /dev/null 2>&1
        client_run "$client" "$URL" 20000 >&2
        callgrind_control -d "${PIDS[0]}" > /dev/null 2>&1
        sleep 1
        total=$(awk '/^summary:/ { print $2; exit }' "$OUT/server.1")
        echo "$SERVER $SCHEME under $client ${CONNECTIONS:-1} x $STREAMS: $(( total / 20000 )) instructions per request"
        ;;
    *) echo "mode: client | h2load | server" >&2; exit 2 ;;
esac
