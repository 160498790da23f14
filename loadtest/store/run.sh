#!/usr/bin/env bash
# Store benchmark (issue 2): COPY N endpoints (default 1,000,000) into the real schema and read them back
# in keyset order. Starts its own PostgreSQL cluster unless DATABASE_URL is given; builds release into
# its own scratch path from a generated package that links Sources/ClarionStore.
#
#   loadtest/store/run.sh            # 1M endpoints
#   N=200000 loadtest/store/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-storebench}"
N="${N:-1000000}"
PKG="$SCRATCH/pkg"
mkdir -p "$PKG/Sources/storebench"
for module in ClarionStore ClarionCrypto ClarionCore CPQ COpenSSL; do
    ln -sfn "$ROOT/Sources/$module" "$PKG/Sources/$module"
done
cp "$ROOT/loadtest/store/StoreBench.swift" "$PKG/Sources/storebench/main.swift"
cat > "$PKG/Package.swift" <<'SWIFT'
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "storebench",
    targets: [
        .systemLibrary(name: "CPQ", path: "Sources/CPQ", pkgConfig: "libpq"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl"),
        .target(name: "ClarionCore", path: "Sources/ClarionCore"),
        .target(name: "ClarionCrypto", dependencies: ["COpenSSL", "ClarionCore"], path: "Sources/ClarionCrypto"),
        .target(name: "ClarionStore", dependencies: ["CPQ", "ClarionCore", "ClarionCrypto"], path: "Sources/ClarionStore",
                resources: [.embedInCode("Migrations")]),
        .executableTarget(name: "storebench", dependencies: ["ClarionStore"], path: "Sources/storebench"),
    ]
)
SWIFT
(cd "$PKG" && swift build -c release --scratch-path "$SCRATCH/build" 2>&1 | grep -E "error|warning: unre" || true)
BIN="$SCRATCH/build/release/storebench"

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
