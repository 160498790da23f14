"""The fan-out as users run it: `clarion serve` on its embedded PostgreSQL, `clarion emulator` as a process of its
own, endpoints and subscriptions loaded through the bulk import routes, one SNS Publish to the topic (boto3), and
completion read from GET /v1/messages/{id}. Then the ceiling: h2load against the same emulator process with the
requests the gateway sends (same count, same APNs/FCM mix, same connections per pool), in the same run.

Prints deliveries/s from publish to completion, the h2load ceiling, their ratio, and where the CPU went (the node,
its PostgreSQL, the emulator) with peak RSS. Run through loadtest/e2e/run.sh.

PLATFORM=webpush runs the same fan-out to N Web Push subscriptions instead (issue 19): the emulator plays the push
service over TLS with a CA made here, issues the subscriptions (its bulk route), and decrypts and verifies every push;
the node encrypts each push to its subscription (RFC 8291) and signs VAPID (RFC 8292). The ceiling is h2load sending
one valid encrypted push (made here with http_ece) N times to the same emulator over one connection, as the node's
one pool per push-service origin does, so the ratio is what the node's own work (encryption included) leaves of the
push service's rate. While the fan-out runs, GET /health is timed every 100 ms: the encryption runs on the node's
worker threads, and this shows what it does to the API's latency."""

import base64
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import http.client
import urllib.request

import statistics

import boto3
from botocore.config import Config
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

BIN = os.environ["BIN"]
N = int(os.environ.get("N", "1000000"))
KEY, SECRET = "AKIACLARIONE2EBENCH01", "e2e-bench-secret-0123456789abcdefghijklm"
TICKS = os.sysconf("SC_CLK_TCK")
APNS_CONNECTIONS, FCM_CONNECTIONS = 2, 8  # ProviderOptions' defaults: connections per pool
WEBPUSH_CONNECTIONS = 1  # one pool per push-service origin, one connection each (ProviderRegistry.webPushSender)
PLATFORM = os.environ.get("PLATFORM", "mixed")
# SNS's SuccessFeedbackSampleRate on the applications: 0 (the default) logs failures only, 100 logs every delivery.
# NODES=2: after the one-node fan-out, a second `clarion serve` joins on the same PostgreSQL (a cluster this script
# starts, since two nodes cannot share the embedded one) and the same publish is timed again with both claiming shards.
NODES = int(os.environ.get("NODES", "1"))
if NODES not in (1, 2):
    raise SystemExit("NODES is 1 or 2")
SAMPLE = os.environ.get("SAMPLE")
SAMPLED = {"SuccessFeedbackSampleRate": SAMPLE} if SAMPLE else {}
if PLATFORM not in ("mixed", "webpush"):
    raise SystemExit("PLATFORM is mixed (half APNs, half FCM) or webpush")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pids):
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
        except OSError:
            pass
    return total


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return 0.0


def postgres_pids(data_dir):
    """The embedded cluster's processes: the postmaster's pid file, then its children."""
    for root, _, files in os.walk(data_dir):
        if "postmaster.pid" in files:
            with open(os.path.join(root, "postmaster.pid")) as f:
                postmaster = int(f.readline())
            children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
            return [postmaster] + [int(p) for p in children]
    return []


def relation_bytes(data_dir):
    """Bytes of the embedded cluster's relations (its `base` directory: tables, indexes, TOAST, free space maps), so
    the growth between two points is what the rows in between cost PostgreSQL on disk, indexes included."""
    for root, _, files in os.walk(data_dir):
        if "postmaster.pid" in files:
            total = 0
            for sub, _, names in os.walk(os.path.join(root, "base")):
                for name in names:
                    try:
                        total += os.path.getsize(os.path.join(sub, name))
                    except OSError:
                        pass
            return total
    return 0


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(header, claims, key):
    signing_input = (b64u(json.dumps(header, separators=(",", ":")).encode()) + "."
                     + b64u(json.dumps(claims, separators=(",", ":")).encode()))
    if isinstance(key, ec.EllipticCurvePrivateKey):
        r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing_input + "." + b64u(signature)


def h2(method, url, data=None, headers=()):
    """The emulator speaks HTTP/2 only (h2c): curl with prior knowledge."""
    args = ["curl", "-s", "--http2-prior-knowledge", "-X", method, url]
    for h in headers:
        args += ["-H", h]
    if data is not None:
        args += ["--data-binary", data]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=True).stdout


class Bench:
    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="clarion-e2e-bench-")
        os.chmod(self.work, 0o755)  # the embedded cluster runs as the postgres user
        self.processes = []
        self.phases = []
        self.cluster = None

    def start(self):
        self.emulator_port, self.port = free_port(), free_port()
        self.emulator_url = f"http://127.0.0.1:{self.emulator_port}"
        self.url = f"http://127.0.0.1:{self.port}"
        self.demo = os.path.join(self.work, "demo")
        # Records off (a million of them in memory would cost the emulator, not the gateway). APNs grants 1 stream
        # before a connection's first provider token and 1000 after; h2load opens its streams at once and cannot
        # wait for the raise, so both start at 1000 here, for the gateway as for the ceiling.
        base = os.path.join(self.work, "emulator.json")
        config = {"recordInMemory": False, "apns": {"maxConcurrentStreamsBeforeToken": 1000}}
        node_env = {}
        if PLATFORM == "webpush":
            # Subscription URLs are https only (endpoint rule), so the push service needs a certificate.
            self.ca = make_ca(self.work)
            config["tls"] = {"enabled": True, "certificatePath": os.path.join(self.work, "server.pem"),
                             "privateKeyPath": os.path.join(self.work, "server.key")}
            self.emulator_url = f"https://127.0.0.1:{self.emulator_port}"
            node_env["CLARION_PROVIDER_CA_FILE"] = self.ca
        with open(base, "w") as f:
            json.dump(config, f)
        self.emulator = self.spawn("emulator", [BIN, "emulator", "--listen", f"127.0.0.1:{self.emulator_port}",
                                                "--config", base, "--write-demo-credentials", self.demo])
        env = {**os.environ, "CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET,
               "CLARION_PROVIDER_ALLOW_HOSTS": "127.0.0.0/8", **node_env}
        self.data = os.path.join(self.work, "data")
        if NODES == 2:
            # A cluster of its own, as an operator runs one for several nodes; the nodes share its URL and master key.
            url = start_cluster(self.data)
            self.cluster = url
            env = {**env, "CLARION_DATABASE_URL": url + "/clarion",
                   "CLARION_MASTER_KEY": base64.b64encode(os.urandom(32)).decode()}
            self.node_args = []
        else:
            self.node_args = ["--data-dir", self.data]
        self.env = env
        self.node = self.spawn("node", [BIN, "serve", *self.node_args, "--listen", f"127.0.0.1:{self.port}"], env)
        self.nodes = [self.node]
        self.wait_ready(self.url)
        out = subprocess.run([BIN, "accounts", "create-api-key", *self.node_args], capture_output=True,
                             text=True, check=True, env=env).stdout
        self.api_key = out.split("key:")[1].split()[0]

    def wait_ready(self, url):
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url + "/ready", timeout=2) as r:
                    if r.status == 200 and os.path.exists(os.path.join(self.demo, "apns.json")):
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit("the node or the emulator did not start: see " + self.work)

    def add_node(self):
        """The second node: the same database, key and settings, its own API port."""
        port = free_port()
        node = self.spawn("node2", [BIN, "serve", *self.node_args, "--listen", f"127.0.0.1:{port}"], self.env)
        self.nodes.append(node)
        self.wait_ready(f"http://127.0.0.1:{port}")

    def spawn(self, name, args, env=None):
        log = open(os.path.join(self.work, name + ".log"), "w")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.processes.append(process)
        return process

    def native(self, method, path, body=None, content_type="application/json"):
        request = urllib.request.Request(self.url + path, data=body, method=method, headers={
            "Authorization": "Bearer " + self.api_key, "Content-Type": content_type})
        with urllib.request.urlopen(request, timeout=600) as r:
            return json.loads(r.read())

    def stream(self, path, lines, content_type="application/x-ndjson"):
        """POST a generated body chunked, as a migration tool would stream a file."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1800)
        connection.putrequest("POST", path)
        for name, value in (("Authorization", "Bearer " + self.api_key), ("Content-Type", content_type),
                            ("Transfer-Encoding", "chunked")):
            connection.putheader(name, value)
        connection.endheaders()
        buffer = []
        size = 0
        for line in lines:
            buffer.append(line)
            size += len(line)
            if size >= 1 << 20:
                chunk = "".join(buffer).encode()
                connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                buffer, size = [], 0
        if buffer:
            chunk = "".join(buffer).encode()
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        body = json.loads(response.read())
        assert response.status == 200 and body["refused"] == 0, (response.status, body)
        return body

    def setup(self):
        self.sns = boto3.client("sns", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id=KEY,
                                aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}, read_timeout=300))
        if PLATFORM == "webpush":
            return self.setup_webpush()
        self.apns = json.load(open(os.path.join(self.demo, "apns.json")))
        self.fcm = json.load(open(os.path.join(self.demo, "fcm-service-account.json")))
        p8 = open(os.path.join(self.demo, self.apns["keyFile"])).read()
        self.p8 = p8
        self.sns.create_platform_application(Name="bench-ios", Platform="APNS", Attributes={
            "PlatformCredential": p8, "PlatformPrincipal": self.apns["keyID"], "ApplePlatformTeamID": self.apns["teamID"],
            "ApplePlatformBundleID": self.apns["bundleID"], "ProviderEndpoint": self.emulator_url, **SAMPLED})
        self.sns.create_platform_application(Name="bench-android", Platform="GCM", Attributes={
            "PlatformCredential": json.dumps(self.fcm), "ProviderEndpoint": self.emulator_url, **SAMPLED})
        self.topic_arn = self.sns.create_topic(Name="bench")["TopicArn"]
        applications = {a["name"]: a["id"] for a in self.native("GET", "/v1/applications?limit=100")["items"]}
        topic = next(t["id"] for t in self.native("GET", "/v1/topics?limit=100")["items"] if t["name"] == "bench")
        half = (N + 1) // 2
        self.sizes = [relation_bytes(self.data)]
        apns_tokens = (f"{i:016x}" + "a" * 48 for i in range(half))
        fcm_tokens = (f"bench-fcm-{i}" for i in range(N - half))
        started = time.time()
        for name, tokens in (("bench-ios", apns_tokens), ("bench-android", fcm_tokens)):
            self.stream(f"/v1/applications/{applications[name]}/endpoints:import",
                        (json.dumps({"token": t}) + "\n" for t in tokens))
        imported = time.time()
        self.sizes.append(relation_bytes(self.data))
        for name, count, token in (("bench-ios", half, lambda i: f"{i:016x}" + "a" * 48),
                                   ("bench-android", N - half, lambda i: f"bench-fcm-{i}")):
            self.stream(f"/v1/topics/{topic}/subscriptions:import?application={applications[name]}",
                        (token(i) + "\n" for i in range(count)), content_type="text/plain")
        self.seed = (imported - started, time.time() - imported)
        self.sizes.append(relation_bytes(self.data))

    def setup_webpush(self):
        self.sns.create_platform_application(Name="bench-site", Platform="WEBPUSH",
                                             Attributes={"VAPIDSubject": "mailto:bench@example.com", **SAMPLED})
        self.topic_arn = self.sns.create_topic(Name="bench")["TopicArn"]
        application = next(a["id"] for a in self.native("GET", "/v1/applications?limit=100")["items"] if a["name"] == "bench-site")
        topic = next(t["id"] for t in self.native("GET", "/v1/topics?limit=100")["items"] if t["name"] == "bench")
        started = time.time()
        subscriptions = subprocess.run(
            ["curl", "-sf", "--cacert", self.ca, "-X", "POST", f"{self.emulator_url}/_emulator/webpush/subscriptions?count={N}"],
            capture_output=True, text=True, timeout=1800, check=True).stdout.splitlines()
        assert len(subscriptions) == N, len(subscriptions)
        self.subscription = json.loads(subscriptions[0])
        made = time.time()
        self.sizes = [relation_bytes(self.data)]
        self.stream(f"/v1/applications/{application}/endpoints:import", (json.dumps({"token": t}) + "\n" for t in subscriptions))
        imported = time.time()
        self.sizes.append(relation_bytes(self.data))
        self.stream(f"/v1/topics/{topic}/subscriptions:import?application={application}", (t + "\n" for t in subscriptions),
                    content_type="text/plain")
        self.seed = (imported - made, time.time() - imported)
        self.sizes.append(relation_bytes(self.data))
        self.subscribe_time = made - started

    def message(self):
        if PLATFORM == "webpush":
            return json.dumps({"default": "bench", "WEBPUSH": json.dumps({"title": "bench", "body": "bench"})})
        return json.dumps({"default": "bench", "APNS": json.dumps({"aps": {"alert": "bench"}}),
                           "GCM": json.dumps({"notification": {"title": "bench"}})})

    def health_probe(self, stop, samples):
        """GET /health every 100 ms on one kept-alive connection, each timed, until `stop` is set."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not stop.is_set():
            started = time.perf_counter()
            connection.request("GET", "/health")
            response = connection.getresponse()
            response.read()
            samples.append(time.perf_counter() - started)
            stop.wait(0.1)
        connection.close()

    def publish_and_wait(self):
        import threading
        message = self.message()
        stop, self.health = threading.Event(), []
        probe = threading.Thread(target=self.health_probe, args=(stop, self.health))
        probe.start()
        database = postgres_pids(self.data)
        node_pids = [n.pid for n in self.nodes]
        before = (cpu_seconds(node_pids), cpu_seconds(database), cpu_seconds([self.emulator.pid]))
        started = time.time()
        message_id = self.sns.publish(TopicArn=self.topic_arn, Message=message, MessageStructure="json")["MessageId"]
        self.first = None
        while True:
            status = self.native("GET", f"/v1/messages/{message_id}")
            if self.first is None and status["deliveries"]["accepted"] > 0:
                self.first = time.time() - started
            if status["state"] in ("Completed", "Failed", "Expired", "Cancelled"):
                break
            time.sleep(0.05)
        # The status's timestamps are whole seconds: the wall time is the client's, from the Publish call to the
        # poll that saw the final state (polled every 50 ms).
        self.wall = time.time() - started
        stop.set()
        probe.join()
        database = postgres_pids(self.data)  # backends come and go; the pool's stay for the run
        after = (cpu_seconds(node_pids), cpu_seconds(database), cpu_seconds([self.emulator.pid]))
        self.status = status
        self.cpu = tuple(a - b for a, b in zip(after, before))
        self.sizes.append(relation_bytes(self.data))
        self.phases.append({"nodes": len(self.nodes), "wall": self.wall, "status": status, "cpu": self.cpu})

    def ceiling_webpush(self):
        """h2load against the same emulator: one push encrypted here to the first subscription (RFC 8291, aes128gcm),
        with a VAPID token for the emulator's origin, sent N times over one connection."""
        import http_ece
        from cryptography.hazmat.primitives.asymmetric import ec as ec_keys
        keys = self.subscription["keys"]
        def unb64(text):
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        body = http_ece.encrypt(self.message().encode(), private_key=ec_keys.generate_private_key(ec_keys.SECP256R1()),
                                dh=unb64(keys["p256dh"]), auth_secret=unb64(keys["auth"]), version="aes128gcm")
        body_file = os.path.join(self.work, "webpush.bin")
        with open(body_file, "wb") as f:
            f.write(body)
        vapid = ec_keys.generate_private_key(ec_keys.SECP256R1())
        public = vapid.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        token = jwt({"typ": "JWT", "alg": "ES256"}, {"aud": self.emulator_url, "exp": int(time.time()) + 3600,
                                                     "sub": "mailto:bench@example.com"}, vapid)
        path = self.subscription["endpoint"].split(str(self.emulator_port), 1)[1]
        return [["h2load", "-n", str(N), "-c", str(WEBPUSH_CONNECTIONS), "-m", "100", "-d", body_file,
                 "-H", f"authorization: vapid t={token}, k={b64u(public)}", "-H", "ttl: 86400",
                 "-H", "content-encoding: aes128gcm", "-H", "content-type: application/octet-stream",
                 f"{self.emulator_url}{path}"]]

    def ceiling_mixed(self):
        """h2load against the same emulator: N/2 APNs sends and N/2 FCM sends at once, each pool's connection count,
        streams per connection as the emulator grants them."""
        now = int(time.time())
        apns_key = serialization.load_pem_private_key(self.p8.encode(), password=None)
        apns_jwt = jwt({"alg": "ES256", "kid": self.apns["keyID"]}, {"iss": self.apns["teamID"], "iat": now}, apns_key)
        fcm_key = serialization.load_pem_private_key(self.fcm["private_key"].encode(), password=None)
        assertion = jwt({"alg": "RS256", "typ": "JWT"}, {
            "iss": self.fcm["client_email"], "scope": "https://www.googleapis.com/auth/firebase.messaging",
            "aud": self.emulator_url + "/token", "iat": now, "exp": now + 3600}, fcm_key)
        token = json.loads(h2("POST", self.emulator_url + "/token",
                              f"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={assertion}",
                              ["content-type: application/x-www-form-urlencoded"]))["access_token"]
        apns_body = os.path.join(self.work, "apns.json")
        fcm_body = os.path.join(self.work, "fcm.json")
        with open(apns_body, "w") as f:
            json.dump({"aps": {"alert": "bench"}}, f)
        with open(fcm_body, "w") as f:
            json.dump({"message": {"token": "bench-fcm-0", "notification": {"title": "bench"}}}, f)
        half = (N + 1) // 2
        runs = [
            ["h2load", "-n", str(half), "-c", str(APNS_CONNECTIONS), "-m", "1000", "-d", apns_body,
             "-H", f"authorization: bearer {apns_jwt}", "-H", f"apns-topic: {self.apns['bundleID']}",
             "-H", "apns-push-type: alert", "-H", "content-type: application/json",
             f"{self.emulator_url}/3/device/{'0' * 16 + 'a' * 48}"],
            ["h2load", "-n", str(N - half), "-c", str(FCM_CONNECTIONS), "-m", "100", "-d", fcm_body,
             "-H", f"authorization: Bearer {token}", "-H", "content-type: application/json",
             f"{self.emulator_url}/v1/projects/{self.fcm['project_id']}/messages:send"],
        ]
        return runs

    def ceiling(self):
        runs = self.ceiling_webpush() if PLATFORM == "webpush" else self.ceiling_mixed()
        before = cpu_seconds([self.emulator.pid])
        started = time.time()
        procs = [subprocess.Popen(r, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in runs]
        outputs = [p.communicate()[0] for p in procs]
        elapsed = time.time() - started
        self.ceiling_cpu = cpu_seconds([self.emulator.pid]) - before
        for out in outputs:
            succeeded = [line for line in out.splitlines() if line.strip().startswith("requests:")]
            if not succeeded or " 0 failed" not in succeeded[0] or " 0 errored" not in succeeded[0]:
                raise SystemExit("h2load did not complete cleanly:\n" + out[-2000:])
            codes = [line for line in out.splitlines() if line.strip().startswith("status codes:")]
            if not codes or "2xx" not in codes[0] or " 0 2xx" in codes[0]:
                raise SystemExit("h2load's requests were not accepted:\n" + out[-2000:])
        self.ceiling_rate = N / elapsed

    def report(self):
        first = self.phases[0]  # one node; the two-node phase is reported after it
        self.status, self.wall, self.cpu = first["status"], first["wall"], first["cpu"]
        s = self.status
        wall = self.wall
        rate = s["deliveries"]["accepted"] / wall if wall > 0 else 0
        node_cpu, db_cpu, emulator_cpu = self.cpu
        accepted = max(s["deliveries"]["accepted"], 1)
        kind = "Web Push subscriptions" if PLATFORM == "webpush" else "half APNs, half FCM"
        if PLATFORM == "webpush":
            print(f"subscriptions made   {N} by the emulator in {self.subscribe_time:.1f} s")
        print(f"endpoints            {N} ({kind}), imported in {self.seed[0]:.1f} s "
              f"({N / self.seed[0]:,.0f}/s), subscribed in {self.seed[1]:.1f} s")
        print(f"message              {s['state']}: {json.dumps(s['deliveries'])}")
        print(f"publish->first seen  {self.first if self.first is not None else float('nan'):.2f} s (polled)")
        print(f"publish->completed   {wall:.2f} s (client clock, Publish call to the poll that saw {s['state']})")
        print(f"deliveries/s         {rate:,.0f}")
        print(f"h2load ceiling       {self.ceiling_rate:,.0f} req/s against the same emulator process")
        print(f"ratio                {rate / self.ceiling_rate:.3f}")
        print(f"CPU during fan-out   node {node_cpu:.1f} s ({node_cpu / accepted * 1e6:.1f} us/delivery), "
              f"PostgreSQL {db_cpu:.1f} s ({db_cpu / accepted * 1e6:.1f} us/delivery), "
              f"emulator {emulator_cpu:.1f} s ({emulator_cpu / accepted * 1e6:.1f} us/delivery)")
        print(f"emulator under h2load {self.ceiling_cpu:.1f} s ({self.ceiling_cpu / N * 1e6:.1f} us/request)")
        if len(self.phases) == 2:
            one, two = self.phases
            rates = [p["status"]["deliveries"]["accepted"] / p["wall"] for p in self.phases]
            print(f"one node             {rates[0]:,.0f} deliveries/s ({one['wall']:.2f} s)")
            print(f"two nodes            {rates[1]:,.0f} deliveries/s ({two['wall']:.2f} s), the same publish again, "
                  f"both nodes claiming shards: {json.dumps(two['status']['deliveries'])}")
            print(f"two nodes / one      {rates[1] / rates[0]:.3f}")
            node_cpu, db_cpu, emulator_cpu = two["cpu"]
            print(f"CPU with two nodes   nodes {node_cpu:.1f} s ({node_cpu / N * 1e6:.1f} us/delivery), "
                  f"PostgreSQL {db_cpu:.1f} s ({db_cpu / N * 1e6:.1f} us/delivery), emulator {emulator_cpu:.1f} s")
            assert two["status"]["state"] == "Completed" and two["status"]["deliveries"]["accepted"] == N
            self.sizes = self.sizes[:4]
        before, endpoints, subscribed, delivered = self.sizes
        print(f"PostgreSQL on disk   {(endpoints - before) / N:.0f} bytes per endpoint, {(subscribed - endpoints) / N:.0f} per "
              f"subscription, {(delivered - subscribed) / N:.0f} per delivery (relation files, indexes included; "
              f"{delivered / 2**20:.0f} MiB in all)")
        if self.health:
            ordered = sorted(self.health)
            print(f"GET /health during   {len(ordered)} probes: median {statistics.median(ordered) * 1e3:.1f} ms, "
                  f"p99 {ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3:.1f} ms, "
                  f"max {ordered[-1] * 1e3:.1f} ms")
        print(f"peak RSS             node {peak_rss_mb(self.node.pid):.0f} MB, emulator {peak_rss_mb(self.emulator.pid):.0f} MB")
        assert s["state"] == "Completed" and s["deliveries"]["accepted"] == N, "every endpoint must be delivered once"

    def close(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
        if self.cluster:
            pg_bin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
            subprocess.run(as_postgres([f"{pg_bin}/pg_ctl", "-D", os.path.join(self.data, "cluster"), "-m", "fast", "-w", "stop"]),
                           capture_output=True)
        if os.environ.get("KEEP") != "1":
            shutil.rmtree(self.work, ignore_errors=True)


def as_postgres(args):
    """PostgreSQL refuses to run as root: as root, run its tools as the postgres user."""
    return ["runuser", "-u", "postgres", "--", *args] if os.getuid() == 0 else args


def start_cluster(root):
    """A PostgreSQL cluster under root/cluster on a free port, password authentication; returns its server URL."""
    os.makedirs(root, exist_ok=True)
    pg_bin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    password = os.urandom(18).hex()
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as f:
        f.write(password + "\n")
    if os.getuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(pwfile, "postgres")
    data = os.path.join(root, "cluster")
    subprocess.run(as_postgres([f"{pg_bin}/initdb", "-D", data, "-A", "scram-sha-256", f"--pwfile={pwfile}", "-U", "postgres",
                                "-E", "UTF8"]), check=True, capture_output=True)
    os.remove(pwfile)
    port = free_port()
    subprocess.run(as_postgres([f"{pg_bin}/pg_ctl", "-D", data, "-l", os.path.join(root, "server.log"), "-w", "-o",
                                f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200", "start"]),
                   check=True, capture_output=True)
    url = f"postgresql://postgres:{password}@127.0.0.1:{port}"
    subprocess.run(["psql", url + "/postgres", "-qc", "CREATE DATABASE clarion"], check=True, capture_output=True)
    return url


def make_ca(work):
    """A CA and a server certificate for 127.0.0.1 signed by it (openssl CLI); returns the CA file."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=work, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
        "-out", "ca.pem", "-days", "2", "-subj", "/CN=clarion bench CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
        "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
        "-days", "2", "-extfile", "san.ext")
    return os.path.join(work, "ca.pem")


def main():
    bench = Bench()
    try:
        bench.start()
        print(f"e2e fan-out ({PLATFORM}, {NODES} node{'s' if NODES > 1 else ''}): {N} endpoints, {os.cpu_count()} cores, load average {open('/proc/loadavg').read().split()[:3]}")
        bench.setup()
        bench.publish_and_wait()
        if NODES == 2:
            bench.add_node()
            bench.publish_and_wait()
        bench.ceiling()
        bench.report()
    finally:
        bench.close()


if __name__ == "__main__":
    sys.exit(main())
