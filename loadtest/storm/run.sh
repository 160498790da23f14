#!/usr/bin/env bash
# Issue 22's fault test at full size: a provider storm during a 1,000,000-endpoint topic fan-out.
#
#   swift build -c release --product clarion && loadtest/storm/run.sh
#   N=100000 loadtest/storm/run.sh                       # smaller
#   DATABASE_URL=postgresql://... loadtest/storm/run.sh  # an existing server (a fresh database is made on it)
#
# Runs the release `clarion serve` (CLARION_BIN, default .build/release/clarion) on a private PostgreSQL against
# `clarion emulator` with the storm's faults: 10% 503, 5% 429 with Retry-After (RETRY_AFTER, 3 s), a GOAWAY on each
# connection every GOAWAY_AFTER streams (5000) and one STALL_MS (2000) stall window opening at send request STALL_AT
# (30% of N). Seeds N endpoints (half APNs, half FCM) subscribed to one topic, publishes once through the SNS API,
# waits for the message to finish, then checks from the emulator's record file and the database: no endpoint lost,
# duplicates within the documented bound, Retry-After honoured. The scenario and its checks are
# Tests/e2e/provider_storm.py, which the CI test (Tests/e2e/test_provider_storm.py, 20,000 endpoints) shares.
# Exit code 0 when every promise held; the figures are printed as JSON.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export N="${N:-1000000}"
CLARION_BIN="${CLARION_BIN:-$ROOT/.build/release/clarion}"
[ -x "$CLARION_BIN" ] || { echo "build the node first: swift build -c release --product clarion" >&2; exit 1; }
WORK="$(mktemp -d /tmp/clarion-storm.XXXXXX)"
chmod 755 "$WORK"
PGROOT=""
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as_pg=()
cleanup() {
    if [ -n "$PGROOT" ]; then
        "${as_pg[@]}" "$bin/pg_ctl" -D "$PGROOT/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$PGROOT"
    fi
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "${DATABASE_URL:-}" ]; then
    # A private cluster, as scripts/test starts one (password auth, loopback only, no fsync: a benchmark's data).
    PGROOT="$WORK/pg"
    mkdir -p "$PGROOT"
    if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$PGROOT"; as_pg=(runuser -u postgres --); fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    password=$(openssl rand -hex 24)
    (umask 077; echo "$password" > "$PGROOT/pw")
    [ ${#as_pg[@]} -eq 0 ] || chown postgres "$PGROOT/pw"
    "${as_pg[@]}" "$bin/initdb" -D "$PGROOT/data" -A scram-sha-256 --pwfile="$PGROOT/pw" -U postgres -E UTF8 --no-sync >/dev/null
    rm -f "$PGROOT/pw"
    "${as_pg[@]}" "$bin/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/server.log" -w -o \
        "-p $port -k $PGROOT -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c shared_buffers=512MB" start >/dev/null
    DATABASE_URL="postgresql://postgres:$password@127.0.0.1:$port"
fi
db="storm_$(date +%s)"
psql "$DATABASE_URL/postgres" -qc "CREATE DATABASE \"$db\""
export STORM_DATABASE="$DATABASE_URL/$db" CLARION_BIN WORK

echo "provider storm, N=$N ($(nproc) cores); load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
cd "$ROOT/Tests/e2e"
python3 - <<'PY'
import json, os, sys, time
from provider_storm import Storm
s = Storm(os.environ["CLARION_BIN"], os.environ["STORM_DATABASE"], endpoints=int(os.environ["N"]),
          workdir=os.environ["WORK"], goaway_after=int(os.environ.get("GOAWAY_AFTER", 5000)),
          stall_at=int(os.environ["STALL_AT"]) if os.environ.get("STALL_AT") else None,
          stall_ms=int(os.environ.get("STALL_MS", 2000)), retry_after=int(os.environ.get("RETRY_AFTER", 3)),
          log=lambda line: print(line, file=sys.stderr, flush=True))
started = time.time()
figures = s.run(timeout=int(os.environ.get("TIMEOUT", 1800)))
figures["script_seconds"] = round(time.time() - started, 1)
print(json.dumps(figures, indent=1))
problems = Storm.violations(figures)
for p in problems:
    print("VIOLATED:", p, file=sys.stderr)
if figures["node_exit"] != 0:
    print("VIOLATED: the node did not stop cleanly:", figures["node_exit"], file=sys.stderr)
sys.exit(1 if problems or figures["node_exit"] != 0 else 0)
PY
echo "load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
