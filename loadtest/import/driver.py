"""Driver of loadtest/import/run.sh: writes N endpoints as NDJSON (the import's input) and as COPY text (the
ceiling's), then times COPY, import, import, COPY into four fresh applications of the same table."""
import json
import os
import random
import subprocess
import sys
import time
import urllib.request

port, key, database, n, work, node_pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
base = f"http://127.0.0.1:{port}"
auth = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}


def post(path, body):
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=auth, method="POST")
    with urllib.request.urlopen(request) as r:
        return json.loads(r.read())


def psql(sql):
    return subprocess.run(["psql", database, "-Atqc", sql], check=True, capture_output=True, text=True).stdout.strip()


def time_ordered_uuid(ms, rnd):
    """UUIDv7 as the node makes them (time-ordered ids keep index inserts local)."""
    value = (ms << 80) | (0x7 << 76) | (rnd.getrandbits(12) << 64) | (0b10 << 62) | rnd.getrandbits(62)
    h = "%032x" % value
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# FCM registration tokens are about 150-165 characters; users own a few devices each.
rnd = random.Random(1)
tokens = ["%s:APA91b%s" % (("%022x" % rnd.getrandbits(88)), "".join(rnd.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") for _ in range(134)))
          for _ in range(n)]
ndjson = os.path.join(work, "endpoints.ndjson")
with open(ndjson, "w") as f:
    for i, token in enumerate(tokens):
        f.write('{"token":"%s","user_id":"user-%d","attributes":{"AppVersion":"4.2.%d"}}\n' % (token, i // 3, i % 10))
size_mb = os.path.getsize(ndjson) / 1e6


def copy_ceiling(app):
    key_ = psql(f"SELECT id FROM platform_applications WHERE name = '{app}'")
    tsv = os.path.join(work, "endpoints.tsv")
    ms = int(time.time() * 1000)
    with open(tsv, "w") as f:
        for i, token in enumerate(tokens):
            f.write("%s\t%s\t%s\tuser-%d\t{\"AppVersion\": \"4.2.%d\"}\n" % (time_ordered_uuid(ms + i // 1000, rnd), key_, token, i // 3, i % 10))
    started = time.time()
    subprocess.run(["psql", database, "-qc",
                    f"\\copy endpoints (external_id, application, token, user_id, attributes) FROM '{tsv}'"], check=True)
    took = time.time() - started
    os.unlink(tsv)
    return took


def import_(app):
    started = time.time()
    out = subprocess.run(["curl", "-sS", "--fail-with-body", "-X", "POST", "-T", ndjson, "-H", "Authorization: " + auth["Authorization"],
                          "-H", "Content-Type: application/x-ndjson", f"{base}/v1/applications/GCM:{app}/endpoints:import"],
                         check=True, capture_output=True, text=True).stdout
    took = time.time() - started
    answer = json.loads(out)
    assert answer["created"] == n and answer["refused"] == 0, answer
    return took


results = []
for step, (kind, app) in enumerate([("COPY", "ceiling-1"), ("import", "import-1"), ("import", "import-2"), ("COPY", "ceiling-2")]):
    post("/v1/applications", {"name": app, "platform": "GCM", "credential": "k"})
    took = copy_ceiling(app) if kind == "COPY" else import_(app)
    results.append((kind, took))
    print(f"  {kind:6} into GCM:{app:9} {n:>9,} endpoints {took:7.2f} s {n / took:>10,.0f} /s   (table now {(step + 1) * n:,} rows)")
copy = sum(t for k, t in results if k == "COPY") / 2
imp = sum(t for k, t in results if k == "import") / 2
with open(f"/proc/{node_pid}/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(f"  NDJSON {size_mb:.0f} MB; mean COPY {n / copy:,.0f} endpoints/s, mean import {n / imp:,.0f} endpoints/s; "
      f"ratio import/COPY {copy / imp:.2f}; node peak RSS {hwm / 1024:.0f} MB")
