# Sourced by run.sh and drain.sh: the benchmark's access key, the release build (or the build given as BIN), and a
# `clarion serve` on a fresh data directory and a free port, stopped and removed when the script exits.
KEY=AKIACLARIONBENCH0001
SECRET=bench-secret-0123456789abcdefghijklmnop
if [ -z "${BIN:-}" ]; then
  swift build -c release --product clarion 2>&1 | grep -E "error|warning: " || true
  BIN="$ROOT/.build/release/clarion"
fi

# start_node NAME ARGS...: sets work (the data directory), port and pid; ARGS go to `clarion serve`.
start_node() {
  local name=$1; shift
  work=$(mktemp -d "/tmp/$name.XXXXXX"); chmod 755 "$work"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  CLARION_ACCESS_KEY_ID=$KEY CLARION_SECRET_ACCESS_KEY=$SECRET "$BIN" serve "$@" --data-dir "$work" \
    --listen "127.0.0.1:$port" >"$work/clarion.log" 2>&1 &
  pid=$!
  trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
}

# bench_endpoint: a GCM application "bench" and its endpoint with token "bench-token", made through the SNS API of
# the node start_node started; prints the endpoint's ARN.
bench_endpoint() {
  python3 - "$port" "$KEY" "$SECRET" <<'PY'
import sys, boto3
port, key, secret = sys.argv[1:4]
sns = boto3.client("sns", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                   aws_access_key_id=key, aws_secret_access_key=secret)
app = sns.create_platform_application(Name="bench", Platform="GCM", Attributes={"PlatformCredential": "{}"})
print(sns.create_platform_endpoint(PlatformApplicationArn=app["PlatformApplicationArn"], Token="bench-token")["EndpointArn"])
PY
}

# native_publish_script FILE ENDPOINT_ID TEXT: a wrk script publishing TEXT to one endpoint through POST /v1/publish
# with a new API key of the node's account.
native_publish_script() {
  local key
  key=$("$BIN" accounts create-api-key --data-dir "$work" | sed -n 's/.*key: //p')
  cat > "$1" <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $key"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"targets":[{"endpoint":"$2"}],"message":{"default":"$3"}}'
LUA
}
