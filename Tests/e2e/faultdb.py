"""What the database fault tests share: a PostgreSQL cluster of the test's own (so it can be stopped, killed and
started again without touching the run's shared cluster), the provider emulator as a process of its own recording
every send to a file, a node on that cluster, and publishers that remember what each publish was answered.

The cluster is made as scripts/test makes the run's (initdb with SCRAM and a generated password, as the postgres user
through runuser when root), in a directory the caller chooses (the disk test puts it on a small tmpfs)."""
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
import http.client

import boto3
import botocore.exceptions
from botocore.config import Config

from conftest import CLARION, Node, free_port, wait_for

KEY = "AKIACLARIONE2EFAULTDB"
SECRET = "e2e-faultdb-secret-0123456789abcdefghijk"
MASTER_KEY = "ZmF1bHQtZGF0YWJhc2UtZTJlLW1hc3Rlci1rZXktMzI="
UID = re.compile(r"fault-[a-z]+-\d+-\d+")


def pg_bin():
    roots = [d for d in os.listdir("/usr/lib/postgresql") if os.path.isdir(f"/usr/lib/postgresql/{d}/bin")]
    return "/usr/lib/postgresql/%s/bin" % sorted(roots, key=lambda v: [int(x) for x in v.split(".")])[-1]


class Cluster:
    """A PostgreSQL cluster under `root` (which must exist and be reachable by the postgres user)."""

    def __init__(self, root, log_path=None):
        self.root = root
        self.data = os.path.join(root, "data")
        # The server's log goes beside a small filesystem, not on it (the disk test fills that one).
        self.log_path = log_path or os.path.join(root, "server.log")
        self.bin = pg_bin()
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.port = free_port()
        self.password = secrets.token_hex(24)
        os.chmod(root, 0o755)
        open(self.log_path, "a").close()
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(self.log_path, "postgres", "postgres")
        pwfile = os.path.join(root, "pw")
        with open(os.open(pwfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(self.password + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres")
        subprocess.run(self.as_pg + [f"{self.bin}/initdb", "-D", self.data, "-A", "scram-sha-256", f"--pwfile={pwfile}",
                                     "-U", "postgres", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True, timeout=120)
        os.remove(pwfile)
        self.url = f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}"

    def start(self):
        r = subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", self.data, "-l", self.log_path, "-w", "-t", "60", "-o",
                                         f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200",
                                         "start"], capture_output=True, text=True, timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr + self.server_log()

    def stop(self, mode="fast"):
        return subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop"],
                              capture_output=True, text=True, timeout=90)

    def running(self):
        r = subprocess.run(self.as_pg + [f"{self.bin}/pg_ctl", "-D", self.data, "status"], capture_output=True, timeout=30)
        return r.returncode == 0

    def server_log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def psql(self, database, sql):
        r = subprocess.run(["psql", f"{self.url}/{database}", "-Atqc", sql], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def create_database(self, name):
        self.psql("postgres", f'CREATE DATABASE "{name}"')
        return f"{self.url}/{name}"


class Emulator:
    """`clarion emulator` (h2c) recording every request to a JSON-lines file; GET /_emulator/records flushes it."""

    def __init__(self, work):
        self.record_path = os.path.join(work, "emulator-records.jsonl")
        self.demo = os.path.join(work, "demo")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(os.path.join(work, "emulator.log"), "w")
        self.proc = subprocess.Popen([CLARION, "emulator", "--listen", f"127.0.0.1:{port}", "--record", self.record_path,
                                      "--write-demo-credentials", self.demo], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: "listening on" in open(self.log.name).read(), timeout=60, what="the emulator")

    def records(self):
        r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", self.url + "/_emulator/records"],
                           capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        out = []
        with open(self.record_path) as f:
            for line in f:
                if line.strip():
                    out.append(json.loads(line))
        return out

    def delivered(self):
        """Publish ids of every accepted send, one entry per send (a duplicate shows twice)."""
        ids = []
        for record in self.records():
            if record.get("endpoint") == "fcm" and record.get("status") == 200:
                match = UID.search(record.get("payload", ""))
                if match:
                    ids.append(match.group(0))
        return ids

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def start_node(database_url, data_dir):
    os.makedirs(data_dir, exist_ok=True)
    node = Node(["--database-url", database_url, "--data-dir", data_dir],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY})
    node.wait_ready()
    return node


def setup_targets(node, emulator, database_url, endpoints=40):
    """An FCM application on the emulator and `endpoints` endpoints; a native API key."""
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    fcm_json = open(os.path.join(emulator.demo, "fcm-service-account.json")).read()
    app = sns.create_platform_application(Name="fault-android", Platform="GCM", Attributes={
        "PlatformCredential": fcm_json, "ProviderEndpoint": emulator.url})["PlatformApplicationArn"]
    arns = [sns.create_platform_endpoint(PlatformApplicationArn=app, Token=f"fault-device-{i:04d}-" + "x" * 40)["EndpointArn"]
            for i in range(endpoints)]
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database_url],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "CLARION_MASTER_KEY": MASTER_KEY})
    assert key.returncode == 0, key.stderr
    return arns, key.stdout.split("key: ")[1].strip()


class Outcome:
    __slots__ = ("uid", "api", "started", "finished", "status", "message_id", "code", "body")

    def __init__(self, uid, api, started):
        self.uid, self.api, self.started = uid, api, started
        self.finished = self.status = self.message_id = self.code = self.body = None


class Publishers:
    """Client threads publishing as fast as they are answered until `stop()`: half through SNS's Query API
    (botocore signs with SigV4 and parses the XML error), half through POST /v1/publish (JSON). Each publish
    carries a unique id in its message text; every answer is kept, with its timing."""

    TIMEOUT = 15  # a request open longer than this is a hang

    def __init__(self, node, arns, api_key, threads=6):
        self.node, self.arns, self.api_key = node, arns, api_key
        self.outcomes = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.sns if i % 2 == 0 else self.native, args=(i,), daemon=True)
                        for i in range(threads)]

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=self.TIMEOUT + 10)
            assert not t.is_alive(), "a publisher is still waiting for an answer"

    def keep(self, outcome):
        outcome.finished = time.time()
        with self.lock:
            self.outcomes.append(outcome)

    def sns(self, index):
        client = boto3.client("sns", endpoint_url=self.node.url, region_name="us-east-1", aws_access_key_id=KEY,
                              aws_secret_access_key=SECRET,
                              config=Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=self.TIMEOUT))
        seq = 0
        while not self.stopping.is_set():
            seq += 1
            outcome = Outcome(f"fault-sns-{index}-{seq}", "sns", time.time())
            try:
                answer = client.publish(TargetArn=self.arns[seq % len(self.arns)], Message="hello " + outcome.uid)
                outcome.status = answer["ResponseMetadata"]["HTTPStatusCode"]
                outcome.message_id = answer["MessageId"]
            except botocore.exceptions.ClientError as e:
                outcome.status = e.response["ResponseMetadata"]["HTTPStatusCode"]
                outcome.code = e.response["Error"].get("Code")
                outcome.body = e.response["Error"].get("Message")
            except Exception as e:  # noqa: BLE001  (a reset, a timeout: kept as what it is)
                outcome.code = type(e).__name__
                outcome.body = str(e)
                time.sleep(0.05)
            self.keep(outcome)

    def native(self, index):
        connection = None
        seq = 0
        while not self.stopping.is_set():
            seq += 1
            outcome = Outcome(f"fault-native-{index}-{seq}", "native", time.time())
            body = json.dumps({"targets": [{"endpoint": self.arns[seq % len(self.arns)]}], "message": "hello " + outcome.uid})
            try:
                if connection is None:
                    connection = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=self.TIMEOUT)
                connection.request("POST", "/v1/publish", body=body, headers={
                    "Content-Type": "application/json", "Authorization": "Bearer " + self.api_key})
                response = connection.getresponse()
                raw = response.read()
                outcome.status = response.status
                parsed = json.loads(raw) if raw else None
                if 200 <= response.status < 300:
                    assert not parsed.get("failed"), parsed
                    outcome.message_id = parsed["messages"][0]["id"]
                else:
                    outcome.code = parsed["error"]["code"]
                    outcome.body = parsed["error"]["message"]
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                    connection = None
            except Exception as e:  # noqa: BLE001
                outcome.code = type(e).__name__
                outcome.body = str(e)
                if connection is not None:
                    connection.close()
                connection = None
                time.sleep(0.05)
            self.keep(outcome)

    def acknowledged(self):
        return [o for o in self.outcomes if o.status is not None and 200 <= o.status < 300]


class ReadyProbe:
    """Polls GET /ready every 0.2 s and keeps (time, status)."""

    def __init__(self, node):
        self.node = node
        self.samples = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stopping.is_set():
            started = time.time()
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=10)
                connection.request("GET", "/ready")
                response = connection.getresponse()
                body = response.read().decode()
                connection.close()
                self.samples.append((started, time.time(), response.status, body))
            except Exception as e:  # noqa: BLE001
                self.samples.append((started, time.time(), None, str(e)))
            time.sleep(0.2)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=20)


def wait_for_deliveries(cluster, emulator, acknowledged, timeout=90):
    """Waits until every acknowledged publish reached the emulator, then 2 s more (a duplicate sent late is seen).
    On a timeout, fails naming what is missing and how the store sees those messages."""
    wanted = {o.uid: o for o in acknowledged}
    deadline = time.time() + timeout
    while time.time() < deadline:
        missing = set(wanted) - set(emulator.delivered())
        if not missing:
            time.sleep(2.0)
            return
        time.sleep(0.5)
    ids = ",".join("'%s'" % wanted[uid].message_id.lower() for uid in sorted(missing)[:20])
    states = cluster.psql("clarion", "SELECT m.external_id, m.state, m.planned, s.state, s.claims, s.lease_expires_at, s.sent, s.accepted "
                                     "FROM messages m LEFT JOIN fanout_shards s ON s.message = m.id "
                                     f"WHERE m.external_id::text IN ({ids})")
    raise AssertionError(f"{len(missing)} of {len(wanted)} acknowledged publishes never reached the emulator; "
                         f"e.g. {sorted(missing)[:5]}; in the store:\n{states}")


def log_lines(node):
    lines = []
    for line in node.output().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            lines.append({"raw": line})
    return lines


def summary(name, figures):
    """One line the figures in docs/testing.md are copied from."""
    print(f"\n[{name}] " + json.dumps(figures, sort_keys=True))
    path = os.environ.get("CLARION_FAULT_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"test": name, **figures}, sort_keys=True) + "\n")


def workdir(prefix):
    path = tempfile.mkdtemp(prefix=prefix)
    os.chmod(path, 0o755)
    return path


def new_id():
    return uuid.uuid4().hex[:8]
