#!/usr/bin/env bash
# API benchmark (issue 5): durable, SigV4-signed direct SNS Publish through a running `clarion serve` (release,
# --role api, embedded PostgreSQL with default durability), next to the same server's GET /health as the ceiling.
# wrk cannot sign, so presign.py signs COUNT distinct Publish requests with botocore just before the run.
# The same run then measures the native API's durable publish (POST /v1/publish, bearer key, one endpoint target).
#
# Each figure comes with the CPU it cost per request (server, PostgreSQL, wrk; from /proc), which stays meaningful
# when other work shares the two cores, and with the disk's flush time: a durable publish waits for one WAL flush,
# so with few connections the rate is bounded by connections / (flush + CPU) before the CPU runs out.
#
#   loadtest/api/run.sh                       # wrk -t2 -c64 and -c256, -d10s each
#   DURATION=20s CONNECTIONS="128" loadtest/api/run.sh
#   BIN=/path/to/clarion SCENARIOS=signed WARMUP=3s loadtest/api/run.sh   # a given build, one scenario (ab.sh)
# SCENARIOS picks from "health signed native"; WARMUP runs wrk that long, unmeasured, before each measured run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64 256}
SCENARIOS=${SCENARIOS:-health signed native}
WARMUP=${WARMUP:-}
. "$ROOT/loadtest/api/node.sh"
start_node clarion-apibench --role api
arn=$(bench_endpoint)
python3 "$ROOT/loadtest/api/presign.py" "http://127.0.0.1:$port" "$KEY" "$SECRET" "$arn" 2000 "$work/publish.lua"
pg_port=$(sed -n 4p "$work/postgres/data/postmaster.pid")
pg_pid=$(head -1 "$work/postgres/data/postmaster.pid")
count_messages() { psql -tA "postgresql://postgres:$(cat "$work/postgres.password")@127.0.0.1:$pg_port/clarion" -c "SELECT count(*) FROM messages"; }
# CPU ticks (user + system) of a process and, with "tree", its children (PostgreSQL's backends).
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $t; }
pg_ticks() { ticks "$pg_pid" $(pgrep -P "$pg_pid"); }
flush_ms=$(python3 - "$work" <<'PY'
import os, sys, time
path = os.path.join(sys.argv[1], "flush-probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
block = b"x" * 8192
start = time.perf_counter()
for i in range(100):
    os.pwrite(fd, block, 0)
    os.fdatasync(fd)
print("%.2f" % ((time.perf_counter() - start) * 10))
os.close(fd); os.unlink(path)
PY
)
hz=$(getconf CLK_TCK)
# measure LABEL PATH SCRIPT CONNECTIONS: wrk's figures, the rows stored, and CPU microseconds per request.
measure() {
  local label=$1 path=$2 script=$3 c=$4 before after s0 s1 p0 p1 w0 w1 wpid n t
  if [ -n "$WARMUP" ]; then
    wrk -t2 -c"$c" -d"$WARMUP" ${script:+-s "$script"} "http://127.0.0.1:$port$path" >/dev/null
  fi
  before=$(count_messages); s0=$(ticks "$pid"); p0=$(pg_ticks)
  wrk -t2 -c"$c" -d"$DURATION" --latency ${script:+-s "$script"} "http://127.0.0.1:$port$path" > "$work/wrk.out" &
  wpid=$!; sleep 0.2; w0=$(ticks "$wpid")
  w1=$w0
  # Sampled while it runs (an exited wrk reads as 0 until it is reaped): the largest reading is the last.
  while kill -0 "$wpid" 2>/dev/null; do t=$(ticks "$wpid"); [ "$t" -gt "$w1" ] && w1=$t; sleep 0.2; done
  wait "$wpid" || true
  after=$(count_messages); s1=$(ticks "$pid"); p1=$(pg_ticks)
  n=$(awk '/requests in/{print $1}' "$work/wrk.out")
  echo "-- $label, wrk -t2 -c$c -d$DURATION"
  grep -E "Requests/sec|Latency |50%|99%|Non-2xx|requests in" "$work/wrk.out"
  [ "$path" = /health ] || echo "messages stored during the run: $((after - before))"
  awk -v n="$n" -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v w=$((w1 - w0)) -v hz="$hz" 'BEGIN {
    printf "CPU per request: server %.1f us, PostgreSQL %.1f us, wrk %.1f us\n", s*1e6/hz/n, p*1e6/hz/n, w*1e6/hz/n }'
}

native_publish_script "$work/native.lua" "${arn##*/}" "load test"

echo "clarion serve --role api (release) on 127.0.0.1:$port; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "disk flush (8 KiB write + fdatasync, the WAL flush every durable commit waits for): $flush_ms ms"
for c in $CONNECTIONS; do
  echo "== $c connections"
  case " $SCENARIOS " in *" health "*) measure "ceiling: GET /health" /health "" "$c" ;; esac
  case " $SCENARIOS " in *" signed "*) measure "SigV4-signed durable Publish (direct, group commit)" / "$work/publish.lua" "$c" ;; esac
  case " $SCENARIOS " in *" native "*)
    measure "native API durable publish (POST /v1/publish, bearer key, direct to one endpoint)" /v1/publish "$work/native.lua" "$c" ;;
  esac
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
