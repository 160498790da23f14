#!/usr/bin/env bash
# HTTP/2 benchmark: our ClarionHTTP2 client vs h2load, against the provider emulator (APNs send path), our
# HTTP2Server answering a static 200, and nghttpd serving a static file; over TLS and h2c, 1 and 4 connections,
# 100 and 250 streams per connection. The same POSTs (200-byte JSON, the same header fields) from both clients.
# Prints req/s for each and the ours/h2load ratio, plus client and server CPU per request.
#
#   loadtest/h2bench/run.sh                                # REQUESTS=100000 REPEAT=1 by default
#   REQUESTS=200000 REPEAT=3 loadtest/h2bench/run.sh       # median of 3 interleaved runs per cell
#   SERVERS="emulator nghttpd" loadtest/h2bench/run.sh     # a subset of: emulator static nghttpd
#   BUILD_ONLY=1 loadtest/h2bench/run.sh                   # build and write the inputs only (instructions.sh)
#
# Builds the h2bench product of the loadtest package (loadtest/Package.swift), release, into its own scratch path
# (.build-h2bench).
#
# Servers bind free ports found at start (nghttpd needs a port on its command line: it is retried on another port if
# that one was taken meanwhile), each is waited for until it accepts connections, and each is checked before every
# cell and restarted if it has died (the cell says so). A server that cannot be started stops the script with its log.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-h2bench}"
REQUESTS="${REQUESTS:-100000}"
REPEAT="${REPEAT:-1}"
SERVERS="${SERVERS:-emulator static nghttpd}"
WORK="$SCRATCH/work"
echo "building h2bench (release) in $SCRATCH ..." >&2
swift build -c "release" --package-path "$ROOT/loadtest" --scratch-path "$SCRATCH" --product h2bench 2>&1 \
    | grep -E "error|warning: |Build complete" >&2 || true
BIN="$SCRATCH/release/h2bench"
[ -x "$BIN" ] && [ "$BIN" -nt "$ROOT/loadtest/h2bench/main.swift" ] || { echo "build failed" >&2; exit 1; }

# --- inputs ------------------------------------------------------------------------------------------------------
CERTS="$WORK/certs"
"$BIN" gencert --out "$CERTS"
BODY="$WORK/body.json"
python3 -c "import sys; s='{\"aps\":{\"alert\":\"' + 'x'*180; s=s[:197]+'\"}}'; sys.stdout.write(s[:200])" > "$BODY"
# The emulator's APNs path: a provider token it accepts, a topic it knows, a well-formed device token. Every server
# gets the very same requests (path and header fields), so the servers' per-request costs compare: nghttpd serves
# a small file at that path, our static server answers any path.
"$BIN" apns-setup --out "$WORK/apns"
DEVICE_TOKEN=$(printf 'ab%.0s' {1..32})
REQUEST_PATH="/3/device/$DEVICE_TOKEN"
DOCROOT="$WORK/htdocs"
mkdir -p "$DOCROOT/3/device"
printf '{"ok":true}' > "$DOCROOT$REQUEST_PATH"
HEADERS=("content-type: application/json" "$(cat "$WORK/apns/authorization")" "apns-topic: com.example.bench"
         "apns-push-type: alert" "apns-priority: 10")

[ "${BUILD_ONLY:-0}" = 1 ] && { echo "$BIN"; exit 0; }  # instructions.sh: the binary and the inputs, no grid

# --- servers -----------------------------------------------------------------------------------------------------
declare -A SPID SPORT
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
alive() { [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat")" != Z ]; }
accepts() { python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.5).close()' "$1" 2>/dev/null; }

# start_server NAME: starts it on a fresh port, waits until it accepts, sets SPID[NAME] and SPORT[NAME].
start_server() {
    local name=$1 log="$WORK/$1.log" attempt port pid
    for attempt in 1 2 3 4 5; do
        port=$(free_port)
        case "$name" in
            emulator-h2c) "$BIN" emulator --config "$WORK/apns/emulator.json" --port "$port" > "$log" 2>&1 & pid=$! ;;
            emulator-tls) "$BIN" emulator --config "$WORK/apns/emulator.json" --port "$port" --tls "$CERTS" > "$log" 2>&1 & pid=$! ;;
            static-h2c) "$BIN" serve --port "$port" --max-streams 1000 > "$log" 2>&1 & pid=$! ;;
            static-tls) "$BIN" serve --port "$port" --max-streams 1000 --tls "$CERTS" > "$log" 2>&1 & pid=$! ;;
            nghttpd-h2c) nghttpd --address=127.0.0.1 --no-tls -m 1000 -d "$DOCROOT" "$port" > "$log" 2>&1 & pid=$! ;;
            nghttpd-tls) nghttpd --address=127.0.0.1 -m 1000 -d "$DOCROOT" "$port" "$CERTS/key.pem" "$CERTS/cert.pem" > "$log" 2>&1 & pid=$! ;;
        esac
        PIDS+=("$pid")
        for _ in $(seq 50); do
            alive "$pid" || break
            if accepts "$port"; then SPID[$name]=$pid; SPORT[$name]=$port; return 0; fi
            sleep 0.1
        done
        echo "note: $name on port $port did not come up (attempt $attempt): $(tail -c 300 "$log" | tr '\n' ' ')" >&2
        kill "$pid" 2>/dev/null || true
    done
    echo "cannot start $name; last log:" >&2
    cat "$log" >&2
    exit 1
}

# ensure_server NAME: restarts NAME if it died since the last cell (with a note and its log's tail).
ensure_server() {
    local name=$1
    if [ -z "${SPID[$name]:-}" ]; then start_server "$name"; return; fi
    if ! alive "${SPID[$name]}"; then
        echo "note: $name (pid ${SPID[$name]}) had exited; restarting. Log: $(tail -c 300 "$WORK/$name.log" | tr '\n' ' ')" >&2
        start_server "$name"
    fi
}

# CPU seconds (user+system) a process has used so far; "nan" if it is gone.
cpu_of() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo nan
}
per_request() { awk -v a="$1" -v b="$2" -v n="$REQUESTS" 'BEGIN { if (a == "nan" || b == "nan") print "nan"; else printf "%.2f", (b-a)*1e6/n }'; }
median2() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }

run_h2load() {  # url conns streams -> "req/s cpu_us_per_req" (h2load's own CPU from getrusage of the child)
    local header_args=()
    for h in "${HEADERS[@]}"; do header_args+=(-H "$h"); done
    python3 - "$REQUESTS" "$@" "$BODY" "${header_args[@]}" <<'PY'
import re, resource, subprocess, sys
n, url, conns, streams, body = sys.argv[1:6]
out = subprocess.run(["h2load", "-n", n, "-c", conns, "-m", streams, "-d", body] + sys.argv[6:] + [url],
                     capture_output=True, text=True).stdout
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
m = re.search(r"finished in [^,]+, ([0-9.]+) req/s", out)
ok = re.search(r"status codes: ([0-9]+) 2xx", out)
if not m or not ok or int(ok.group(1)) != int(n):
    sys.stderr.write("h2load: not every request got a 2xx:\n" + out)
print("%s %.2f" % (m.group(1) if m else "0", (usage.ru_utime + usage.ru_stime) * 1e6 / int(n)))
PY
}
run_ours() {  # url conns streams -> "req/s cpu_us_per_req"
    local args=() out
    [[ "$1" == https* ]] && args+=(--ca "$CERTS/cert.pem")
    for h in "${HEADERS[@]:1}"; do args+=(--header "$h"); done
    out=$("$BIN" load --url "$1" --connections "$2" --streams "$3" --requests "$REQUESTS" --body-bytes 200 "${args[@]}") || true
    echo "$out" >> "$WORK/ours-client.log"
    if ! grep -q "failed=0 .*statuses=200:$REQUESTS\$" <<< "$(head -1 <<< "$out")"; then echo "ours: $out" >&2; fi
    sed -n 's/.*rps=\([0-9]*\).*client_cpu_us_per_req=\([0-9.]*\).*/\1 \2/p' <<< "$out" | head -1
}

for server in $SERVERS; do
    case "$server" in emulator|static|nghttpd) ;; *) echo "unknown server $server" >&2; exit 2 ;; esac
    start_server "$server-h2c"; start_server "$server-tls"
done

echo
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u '+%Y-%m-%d %H:%M UTC');" \
     "$REQUESTS requests per run, $REPEAT run(s) per cell (median)"
printf "%-8s %-4s %5s %7s | %12s %12s %6s | %10s %10s %6s | %9s %9s\n" \
    server tls conns streams "h2load r/s" "ours r/s" ratio "h2l us/req" "ours us/req" "cpu" "srv(h2l)" "srv(ours)"
printf '%.0s-' {1..128}; echo

for server in $SERVERS; do
  for proto in h2c tls; do
    name="$server-$proto"
    scheme=http; [ "$proto" = tls ] && scheme=https
    for conns in 1 4; do
      for streams in 100 250; do
        h2l=(); ours=(); srv_h2l=(); srv_ours=(); client=(); h2lcpu=()
        for _ in $(seq "$REPEAT"); do
          ensure_server "$name"
          url="$scheme://127.0.0.1:${SPORT[$name]}$REQUEST_PATH"; spid=${SPID[$name]}
          c0=$(cpu_of "$spid"); read -r r hc <<< "$(run_h2load "$url" "$conns" "$streams")"; c1=$(cpu_of "$spid")
          h2l+=("$r"); h2lcpu+=("$hc"); srv_h2l+=("$(per_request "$c0" "$c1")")
          ensure_server "$name"
          url="$scheme://127.0.0.1:${SPORT[$name]}$REQUEST_PATH"; spid=${SPID[$name]}
          c0=$(cpu_of "$spid"); read -r r cu <<< "$(run_ours "$url" "$conns" "$streams")"; c1=$(cpu_of "$spid")
          ours+=("${r:-0}"); client+=("${cu:-nan}"); srv_ours+=("$(per_request "$c0" "$c1")")
        done
        mh=$(printf '%s\n' "${h2l[@]}" | median); mo=$(printf '%s\n' "${ours[@]}" | median)
        ratio=$(awk -v o="$mo" -v h="$mh" 'BEGIN { if (h > 0) printf "%.2f", o/h; else print "nan" }')
        ch=$(printf '%s\n' "${h2lcpu[@]}" | median2); co=$(printf '%s\n' "${client[@]}" | median2)
        cratio=$(awk -v o="$co" -v h="$ch" 'BEGIN { if (o > 0) printf "%.2f", h/o; else print "nan" }')
        printf "%-8s %-4s %5s %7s | %12.0f %12.0f %6s | %10s %10s %6s | %9s %9s\n" "$server" "$proto" "$conns" "$streams" \
            "$mh" "$mo" "$ratio" "$ch" "$co" "$cratio" \
            "$(printf '%s\n' "${srv_h2l[@]}" | median2)" "$(printf '%s\n' "${srv_ours[@]}" | median2)"
      done
    done
  done
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ratio: ours/h2load req/s. h2l us/req, ours us/req: client CPU per request (user+system, getrusage);"
echo "cpu: h2load CPU/ours CPU per request (>= 1 means our client is as cheap as h2load). srv(h2l), srv(ours): CPU"
echo "the server process used per request during h2load's and our run (from /proc/PID/stat, 10 ms ticks)."
echo "Every request: POST /3/device/<64 hex>, 200-byte JSON, authorization (a provider token), apns-topic,"
echo "apns-push-type, apns-priority, content-type. emulator: the APNs accept path (200 with apns-id); static: our"
echo "HTTP2Server answering a fixed 200; nghttpd: a static file at that path."
