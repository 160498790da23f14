"""Writes a wrk Lua script that replays pre-signed SNS Publish requests (wrk cannot compute SigV4 itself).

A SigV4 signature stays valid for AWS's 15-minute window and carries no nonce, so a set of requests signed just
before the run exercises the server's full verification path on every request.

usage: presign.py URL ACCESS_KEY SECRET TARGET_ARN COUNT OUT.lua
"""
import sys

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from urllib.parse import quote

url, key, secret, arn, count, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
credentials = Credentials(key, secret)
requests = []
for i in range(count):
    body = ("Action=Publish&Version=2010-03-31&TargetArn=" + quote(arn, safe="")
            + "&Message=" + quote('{"default":"load test %d"}' % i, safe="") + "&MessageStructure=json")
    request = AWSRequest(method="POST", url=url + "/", data=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    SigV4Auth(credentials, "sns", "us-east-1").add_auth(request)
    headers = {k: v for k, v in request.headers.items() if k.lower() in ("authorization", "x-amz-date", "content-type")}
    requests.append((headers, body))


def lua_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


with open(out, "w") as f:
    f.write("local requests = {\n")
    for headers, body in requests:
        h = ", ".join(f"[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items())
        f.write(f"  {{ headers = {{ {h} }}, body = {lua_string(body)} }},\n")
    f.write("}\n")
    # Each thread formats its requests once in init(); request() only hands out the next string, and there is no
    # response() callback (wrk counts non-2xx answers itself), so the client spends little CPU per request on the
    # two cores it shares with the server and PostgreSQL.
    f.write("""local formatted = {}
local counter = 0
init = function(args)
  for i, r in ipairs(requests) do formatted[i] = wrk.format("POST", "/", r.headers, r.body) end
end
request = function()
  counter = counter + 1
  return formatted[(counter % #formatted) + 1]
end
""")
