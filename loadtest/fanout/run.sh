#!/usr/bin/env bash
# Fan-out load test (issue 6): one command. Seeds N endpoints by COPY (half APNs, half FCM, both pointed at the
# emulator), subscribes them to one topic, publishes once, runs the dispatcher with the real provider clients
# (HTTP/2 h2c to the emulator in a separate process) and reports deliveries/s from publish to completion (the
# final checkpoint follows the last provider response), CPU and peak RSS of the gateway and of the emulator.
#
#   loadtest/fanout/run.sh                    # N=1000000, release build
#   N=100000 CONFIG=debug loadtest/fanout/run.sh
#   WORKERS=4 DATABASE_URL=postgresql://... loadtest/fanout/run.sh
#
# Builds into its own scratch path from a generated package that links the Sources modules it needs.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SCRATCH="${SCRATCH:-$ROOT/.build-fanoutbench}"
N="${N:-1000000}"
CONFIG="${CONFIG:-release}"
PKG="$SCRATCH/pkg"
WORK="$(mktemp -d /tmp/fanoutbench.XXXXXX)"
chmod 755 "$WORK"  # the embedded PostgreSQL runs as its own user
mkdir -p "$PKG/Sources/fanoutbench"
for module in ClarionCore ClarionCrypto ClarionStore ClarionHTTP2 ClarionProviders ClarionDispatch ClarionEmulator \
              CPQ COpenSSL CNghttp2 CCurl; do
    ln -sfn "$ROOT/Sources/$module" "$PKG/Sources/$module"
done
cp "$ROOT/loadtest/fanout/FanOutBench.swift" "$PKG/Sources/fanoutbench/main.swift"
cat > "$PKG/Package.swift" <<'SWIFT'
// swift-tools-version:6.0
import PackageDescription
let settings: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]
let package = Package(
    name: "fanoutbench",
    platforms: [.macOS(.v14)],
    targets: [
        .systemLibrary(name: "CPQ", path: "Sources/CPQ", pkgConfig: "libpq"),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CNghttp2", path: "Sources/CNghttp2", pkgConfig: "libnghttp2"),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl"),
        .target(name: "ClarionCore", path: "Sources/ClarionCore", swiftSettings: settings),
        .target(name: "ClarionCrypto", dependencies: ["COpenSSL", "ClarionCore"], path: "Sources/ClarionCrypto", swiftSettings: settings),
        .target(name: "ClarionStore", dependencies: ["CPQ", "ClarionCore", "ClarionCrypto"], path: "Sources/ClarionStore", swiftSettings: settings),
        .target(name: "ClarionHTTP2", dependencies: ["CNghttp2", "COpenSSL", "ClarionCore"], path: "Sources/ClarionHTTP2", swiftSettings: settings),
        .target(name: "ClarionProviders", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionHTTP2", "CCurl"], path: "Sources/ClarionProviders", swiftSettings: settings),
        .target(name: "ClarionDispatch", dependencies: ["ClarionCore", "ClarionStore", "ClarionProviders"], path: "Sources/ClarionDispatch", swiftSettings: settings),
        .target(name: "ClarionEmulator", dependencies: ["ClarionCore", "ClarionCrypto", "ClarionHTTP2"], path: "Sources/ClarionEmulator", swiftSettings: settings),
        .executableTarget(name: "fanoutbench", dependencies: ["ClarionDispatch", "ClarionEmulator"], path: "Sources/fanoutbench", swiftSettings: settings),
    ]
)
SWIFT
echo "building fanoutbench ($CONFIG) in $SCRATCH ..." >&2
swift build -c "$CONFIG" --package-path "$PKG" --scratch-path "$SCRATCH/build" 2>&1 | grep -E "error|warning: |Build complete" >&2 || true
BIN="$SCRATCH/build/$CONFIG/fanoutbench"
[ -x "$BIN" ] || { echo "build failed" >&2; exit 1; }

EMU_PID=""
cleanup() { [ -n "$EMU_PID" ] && kill "$EMU_PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
"$BIN" emulator "$WORK" > "$WORK/emulator.log" 2>&1 &
EMU_PID=$!
for _ in $(seq 1 200); do [ -s "$WORK/port" ] && break; sleep 0.05; done
[ -s "$WORK/port" ] || { echo "emulator did not start" >&2; cat "$WORK/emulator.log" >&2; exit 1; }

echo "fan-out of $N endpoints ($CONFIG build, $(nproc) cores, emulator on the same machine)"
"$BIN" run "$WORK" "$N"
# The emulator's own cost (separate process): CPU ticks and peak RSS from /proc.
TICKS=$(getconf CLK_TCK)
read -r UTIME STIME < <(awk '{print $14, $15}' "/proc/$EMU_PID/stat")
HWM=$(awk '/VmHWM/ {print $2}' "/proc/$EMU_PID/status")
echo "emulator CPU         $(awk -v u="$UTIME" -v s="$STIME" -v t="$TICKS" 'BEGIN {printf "%.1f", (u+s)/t}') s (whole run)"
echo "emulator peak RSS    $((HWM / 1024)) MB"
