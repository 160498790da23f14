#!/usr/bin/env bash
# HTTP/2 client benchmark: our ClarionHTTP2 client vs h2load, against our HTTP2Server (static 200) and nghttpd
# (static file), over TLS and h2c, 1 and 4 connections, 100 and 250 streams per connection. Same POSTs (200-byte
# JSON) from both clients. Prints req/s for each and the ours/h2load ratio, plus server and client CPU per request.
#
#   loadtest/h2bench/run.sh                 # REQUESTS=100000 REPEAT=1 by default
#   REQUESTS=200000 REPEAT=3 loadtest/h2bench/run.sh   # median of 3 interleaved runs per cell
#
# Builds release into its own scratch path (.build-h2bench) from a generated package that links Sources/ClarionHTTP2.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-h2bench}"
REQUESTS="${REQUESTS:-100000}"
REPEAT="${REPEAT:-1}"
PKG="$SCRATCH/pkg"
WORK="$SCRATCH/work"
mkdir -p "$PKG/Sources/h2bench" "$WORK"

# --- build -------------------------------------------------------------------------------------------------------
for module in ClarionHTTP2 CNghttp2 COpenSSL; do
    ln -sfn "$ROOT/Sources/$module" "$PKG/Sources/$module"
done
cp "$ROOT/loadtest/h2bench/H2Bench.swift" "$PKG/Sources/h2bench/main.swift"
cat > "$PKG/Package.swift" <<'SWIFT'
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "h2bench",
    targets: [
        .systemLibrary(name: "CNghttp2", path: "Sources/CNghttp2", pkgConfig: "libnghttp2"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl"),
        .target(name: "ClarionHTTP2", dependencies: ["CNghttp2", "COpenSSL"], path: "Sources/ClarionHTTP2",
                swiftSettings: [.enableUpcomingFeature("ExistentialAny")]),
        .executableTarget(name: "h2bench", dependencies: ["ClarionHTTP2"], path: "Sources/h2bench"),
    ]
)
SWIFT
echo "building h2bench (release) in $SCRATCH ..." >&2
swift build -c release --package-path "$PKG" --scratch-path "$SCRATCH/build" 2>&1 | grep -E "error|warning: |Compiling|Build complete" >&2 || true
BIN="$SCRATCH/build/release/h2bench"
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }

# --- servers -------------------------------------------------------------------------------------------------------
CERTS="$WORK/certs"
"$BIN" gencert --out "$CERTS"
DOCROOT="$WORK/htdocs"
mkdir -p "$DOCROOT"
printf '{"ok":true}' > "$DOCROOT/ok.json"
BODY="$WORK/body.json"
python3 -c "import sys; s='{\"aps\":{\"alert\":\"' + 'x'*180; s=s[:197]+'\"}}'; sys.stdout.write(s[:200])" > "$BODY"

BASE=$(( 20000 + (RANDOM % 20000) ))
OURS_H2C=$BASE; OURS_TLS=$((BASE+1)); NGHTTPD_H2C=$((BASE+2)); NGHTTPD_TLS=$((BASE+3))
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

"$BIN" serve --port "$OURS_H2C" --max-streams 1000 > "$WORK/ours-h2c.log" 2>&1 & PIDS+=($!); PID_OURS_H2C=$!
"$BIN" serve --port "$OURS_TLS" --max-streams 1000 --tls "$CERTS" > "$WORK/ours-tls.log" 2>&1 & PIDS+=($!); PID_OURS_TLS=$!
nghttpd --address=127.0.0.1 --no-tls -m 1000 -d "$DOCROOT" "$NGHTTPD_H2C" > "$WORK/nghttpd-h2c.log" 2>&1 & PIDS+=($!); PID_NG_H2C=$!
nghttpd --address=127.0.0.1 -m 1000 -d "$DOCROOT" "$NGHTTPD_TLS" "$CERTS/key.pem" "$CERTS/cert.pem" > "$WORK/nghttpd-tls.log" 2>&1 & PIDS+=($!); PID_NG_TLS=$!
sleep 1

# CPU seconds (user+system) a process has used so far.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$1/stat"; }
median2() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }

run_h2load() {  # url conns streams -> "req/s cpu_us_per_req" (h2load's own CPU from getrusage of the child)
    python3 - "$REQUESTS" "$@" "$BODY" <<'PY'
import re, resource, subprocess, sys
n, url, conns, streams, body = sys.argv[1:6]
out = subprocess.run(["h2load", "-n", n, "-c", conns, "-m", streams, "-d", body,
                      "-H", "content-type: application/json", url], capture_output=True, text=True).stdout
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
m = re.search(r"finished in [^,]+, ([0-9.]+) req/s", out)
ok = re.search(r"requests: .* ([0-9]+) succeeded", out)
if not m or not ok or int(ok.group(1)) != int(n):
    sys.stderr.write(out)
print("%s %.2f" % (m.group(1) if m else "0", (usage.ru_utime + usage.ru_stime) * 1e6 / int(n)))
PY
}
run_ours() {  # url conns streams -> req/s
    local ca=()
    [[ "$1" == https* ]] && ca=(--ca "$CERTS/cert.pem")
    "$BIN" load --url "$1" --connections "$2" --streams "$3" --requests "$REQUESTS" --body-bytes 200 "${ca[@]}" \
        | tee -a "$WORK/ours-client.log" | sed -n 's/.*rps=\([0-9]*\).*client_cpu_us_per_req=\([0-9.]*\).*/\1 \2/p'
}

echo
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $REQUESTS requests per run, $REPEAT run(s) per cell (median)"
printf "%-8s %-4s %5s %7s | %12s %12s %6s | %10s %10s %6s | %9s %9s\n" \
    server tls conns streams "h2load r/s" "ours r/s" ratio "h2l us/req" "ours us/req" "cpu" "srv(h2l)" "srv(ours)"
printf '%.0s-' {1..128}; echo

for server in ours nghttpd; do
  for proto in h2c tls; do
    case "$server-$proto" in
      ours-h2c) url="http://127.0.0.1:$OURS_H2C/ok.json"; spid=$PID_OURS_H2C ;;
      ours-tls) url="https://127.0.0.1:$OURS_TLS/ok.json"; spid=$PID_OURS_TLS ;;
      nghttpd-h2c) url="http://127.0.0.1:$NGHTTPD_H2C/ok.json"; spid=$PID_NG_H2C ;;
      nghttpd-tls) url="https://127.0.0.1:$NGHTTPD_TLS/ok.json"; spid=$PID_NG_TLS ;;
    esac
    for conns in 1 4; do
      for streams in 100 250; do
        h2l=(); ours=(); srv_h2l=(); srv_ours=(); client=(); h2lcpu=()
        for _ in $(seq "$REPEAT"); do
          c0=$(cpu_of "$spid"); read -r r hc <<< "$(run_h2load "$url" "$conns" "$streams")"; c1=$(cpu_of "$spid")
          h2l+=("$r"); h2lcpu+=("$hc"); srv_h2l+=("$(awk -v a="$c0" -v b="$c1" -v n="$REQUESTS" 'BEGIN { printf "%.2f", (b-a)*1e6/n }')")
          c0=$(cpu_of "$spid"); read -r r cu <<< "$(run_ours "$url" "$conns" "$streams")"; c1=$(cpu_of "$spid")
          ours+=("$r"); client+=("$cu"); srv_ours+=("$(awk -v a="$c0" -v b="$c1" -v n="$REQUESTS" 'BEGIN { printf "%.2f", (b-a)*1e6/n }')")
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
echo "ratio: ours/h2load req/s. h2l us/req, ours us/req: client CPU per request (user+system, getrusage);"
echo "cpu: h2load CPU/ours CPU per request (>= 1 means our client is as cheap as h2load). srv(h2l), srv(ours): CPU"
echo "the server process used per request during h2load's and our run (from /proc/PID/stat, 10 ms ticks)."
