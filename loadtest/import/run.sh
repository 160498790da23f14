#!/usr/bin/env bash
# Bulk import benchmark (issue 20): endpoints/s through POST /v1/applications/{id}/endpoints:import of the release
# `clarion serve`, against its ceiling measured in the same run: a plain COPY (psql's \copy) of the same N endpoints
# into the same `endpoints` table, with the production indexes and triggers in place. Runs A B B A (COPY, import,
# import, COPY), each into a fresh application of the same table, so table growth weighs on both alike. Starts its
# own PostgreSQL cluster (default durability, shared_buffers 512MB) unless DATABASE_URL is given.
#
#   loadtest/import/run.sh                 # 1,000,000 endpoints per step
#   N=200000 loadtest/import/run.sh
#   BIN=.build/debug/clarion loadtest/import/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
N="${N:-1000000}"
if [ -z "${BIN:-}" ]; then
  swift build -c release --package-path "$ROOT" --product clarion 2>&1 | grep -E "error|warning: " >&2 || true
  BIN="$ROOT/.build/release/clarion"
fi
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
work=$(mktemp -d /tmp/clarion-importbench.XXXXXX); chmod 755 "$work"
cleanup() {
  [ -n "${node:-}" ] && kill -TERM "$node" 2>/dev/null && wait "$node" 2>/dev/null
  [ -n "${pgroot:-}" ] && "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgroot/data" -m fast -w stop >/dev/null
  rm -rf "$work" "${pgroot:-/nonexistent}"
}
trap cleanup EXIT
as_pg=()
if [ -z "${DATABASE_URL:-}" ]; then
  pgroot=$(mktemp -d /tmp/clarion-importbench-pg.XXXXXX); chmod 755 "$pgroot"
  if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$pgroot"; as_pg=(runuser -u postgres --); fi
  pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "${as_pg[@]}" "$pgbin/initdb" -D "$pgroot/data" -A trust -U postgres -E UTF8 --no-sync >/dev/null
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgroot/data" -l "$pgroot/log" -w -o "-p $pgport -k $pgroot -c listen_addresses=127.0.0.1 -c shared_buffers=512MB -c max_wal_size=4GB" start >/dev/null
  DATABASE_URL="postgresql://postgres@127.0.0.1:$pgport/postgres"
fi
export CLARION_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --database-url "$DATABASE_URL" --data-dir "$work" --listen "127.0.0.1:$port" >"$work/clarion.log" 2>&1 &
node=$!
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
key=$("$BIN" accounts create-api-key --database-url "$DATABASE_URL" | sed -n 's/.*key: //p')
echo "import benchmark: $N endpoints per step, $(nproc) cores, $("$pgbin/postgres" --version | awk '{print $3}'), load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$ROOT/loadtest/import/driver.py" "$port" "$key" "$DATABASE_URL" "$N" "$work" "$node"
grep '"endpoints imported"' "$work/clarion.log" | sed 's/^/  node: /' | cut -c1-400
