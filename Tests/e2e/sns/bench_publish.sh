#!/usr/bin/env bash
# Direct SNS Publish over keep-alive connections with wrk: the whole path (Query decoding, endpoint lookup,
# validation, group commit, XML) against a migrated test database. Authentication is off (wrk cannot sign);
# SigV4's cost is measured apart by loadtest/api.
#
#   Tests/e2e/sns/bench_publish.sh                 # debug build, 5 s, wrk -t2 -c64
#   DURATION=10s CONNECTIONS=128 SCRATCH=.build-sns Tests/e2e/sns/bench_publish.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
SCRATCH=${SCRATCH:-.build-sns}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-64}
here=$(mktemp -d)
trap 'touch "$here/bench.stop"; sleep 1; rm -rf "$here"' EXIT

swift build --scratch-path "$SCRATCH" --manifest-cache local --build-tests >/dev/null
CLARION_SNS_BENCH_FILE="$here/bench" swift test --skip-build --scratch-path "$SCRATCH" --manifest-cache local \
  --filter "SNSPublishBenchmarkServer" >"$here/server.log" 2>&1 &
for _ in $(seq 1 600); do [ -s "$here/bench" ] && break; sleep 0.1; done
read -r port arn <"$here/bench" || true
encoded=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$arn")
cat >"$here/publish.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
wrk.body = "Action=Publish&Version=2010-03-31&TargetArn=$encoded&Message=%7B%22default%22%3A%22hello%22%7D&MessageStructure=json"
LUA
curl -s -X POST -H 'Content-Type: application/x-www-form-urlencoded' --data-binary "@-" "http://127.0.0.1:$port/" \
  <<<"Action=Publish&TargetArn=$encoded&Message=hello" | grep -q MessageId || { echo "publish failed"; cat "$here/server.log"; exit 1; }
echo "SNS Publish (direct, group commit) on 127.0.0.1:$port, $CONNECTIONS connections, $DURATION"
wrk -t2 -c"$CONNECTIONS" -d"$DURATION" -s "$here/publish.lua" "http://127.0.0.1:$port/"
touch "$here/bench.stop"
wait || true
grep "SNS publish benchmark" "$here/server.log" || true
