#!/usr/bin/env bash
# Store benchmark (issue 2): COPY N endpoints (default 1,000,000) into the real schema and read them back
# in keyset order. Starts its own PostgreSQL cluster unless DATABASE_URL is given; builds the storebench product of
# the loadtest package (loadtest/Package.swift), release, into its own scratch path.
#
#   loadtest/store/run.sh            # 1M endpoints
#   N=200000 loadtest/store/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-storebench}"
N="${N:-1000000}"
swift build -c "release" --package-path "$ROOT/loadtest" --scratch-path "$SCRATCH" --product storebench 2>&1 \
    | grep -E "error|warning: |Build complete" >&2 || true
BIN="$SCRATCH/release/storebench"

if [ -z "${DATABASE_URL:-}" ]; then
    pgroot=$(mktemp -d /tmp/clarion-storebench.XXXXXX); chmod 755 "$pgroot"
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    as_pg=(); if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$pgroot"; as_pg=(runuser -u postgres --); fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "${as_pg[@]}" "$bin/initdb" -D "$pgroot/data" -A trust -U postgres -E UTF8 --no-sync >/dev/null
    # Default durability settings: the figures are what a real node sees.
    "${as_pg[@]}" "$bin/pg_ctl" -D "$pgroot/data" -l "$pgroot/log" -w -o "-p $port -k $pgroot -c listen_addresses=127.0.0.1 -c shared_buffers=512MB -c max_wal_size=4GB" start >/dev/null
    trap '"${as_pg[@]}" "$bin/pg_ctl" -D "$pgroot/data" -m fast -w stop >/dev/null; rm -rf "$pgroot"' EXIT
    DATABASE_URL="postgresql://postgres@127.0.0.1:$port/postgres"
fi
echo "store benchmark: $N endpoints, $(nproc) cores, PostgreSQL $("${as_pg[@]}" "$bin/postgres" --version 2>/dev/null | awk '{print $3}')"
"$BIN" "$DATABASE_URL" "$N"
