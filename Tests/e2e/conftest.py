"""Shared fixtures for the end-to-end tests: the built `clarion` binary, free ports, fresh databases
on the test run's PostgreSQL (CLARION_TEST_DATABASE_URL, started by scripts/test), and a running node."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid

import boto3
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLARION = os.environ.get("CLARION_BIN", os.path.join(ROOT, ".build", "debug", "clarion"))
SERVER_URL = os.environ.get("CLARION_TEST_DATABASE_URL", "")


# Issue 17: "A test scans a full end-to-end run's logs for the secrets and tokens that run used." Every node this
# suite starts writes its log to a file listed here, and every credential, API key and full device token the tests
# hand Clarion (through boto3, urllib or a node's environment) is recorded; test_zz_log_secrets.py, the last file
# of the run, looks for each of them in each log.
NODE_LOGS = []
SECRETS_USED = set()
SECRET_KEYS = ("token", "secret", "credential", "private", "password", "key_pem", "api_key", "p256dh", "auth")


def used_secret(value):
    """Records a value that must never appear in a log (short values would match by chance: 16 characters up)."""
    if isinstance(value, str) and len(value.strip()) >= 16:
        SECRETS_USED.add(value.strip())


def _record_json_secrets(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            _record_json_secrets(v, str(k))
    elif isinstance(value, list):
        for v in value:
            _record_json_secrets(v, key)
    elif isinstance(value, str) and any(word in key.lower() for word in SECRET_KEYS):
        used_secret(value)


def _record_sns_params(params, **_):
    used_secret(params.get("Token"))
    attributes = params.get("Attributes") or {}
    used_secret(attributes.get("Token"))
    used_secret(attributes.get("PlatformCredential"))


def _record_signing_secret(request_signer=None, **_):
    used_secret(getattr(getattr(request_signer, "_credentials", None), "secret_key", None))


boto3.setup_default_session()
boto3.DEFAULT_SESSION.events.register("provide-client-params.sns", _record_sns_params)
boto3.DEFAULT_SESSION.events.register("before-sign.sns", _record_signing_secret)
_urlopen = urllib.request.urlopen


def _recording_urlopen(request, *args, **kwargs):
    if isinstance(request, urllib.request.Request):
        authorization = request.get_header("Authorization") or ""
        if authorization.startswith("Bearer "):
            used_secret(authorization[len("Bearer "):])
        if isinstance(request.data, bytes) and request.data[:1] in (b"{", b"["):
            try:
                _record_json_secrets(json.loads(request.data))
            except ValueError:
                pass
    return _urlopen(request, *args, **kwargs)


urllib.request.urlopen = _recording_urlopen


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh_database():
    if not SERVER_URL:
        pytest.skip("CLARION_TEST_DATABASE_URL is not set (run scripts/test)")
    name = "e2e_" + uuid.uuid4().hex[:10]
    subprocess.run(["psql", SERVER_URL + "/postgres", "-qc", f'CREATE DATABASE "{name}"'], check=True)
    return SERVER_URL + "/" + name


def h2_get(url, timeout=30):
    """GET from the emulator, which speaks HTTP/2 only (h2c): curl with prior knowledge."""
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", url], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def curl_with_ca(emulator, method, path):
    """A request to an emulator serving TLS with a test-made CA (`emulator["url"]`, `emulator["ca"]`)."""
    r = subprocess.run(["curl", "-s", "-X", method, "--cacert", emulator["ca"], emulator["url"] + path],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def sns_node_trusting(ca, key, secret, prefix):
    """For a module fixture (`yield from`): a node on a data directory of its own that trusts `ca` for provider
    traffic, with a boto3 SNS client as `node.sns`; stopped (exit 0) and removed afterwards."""
    from botocore.config import Config
    data = tempfile.mkdtemp(prefix=prefix)
    node = Node(["--data-dir", data], env={"CLARION_ACCESS_KEY_ID": key, "CLARION_SECRET_ACCESS_KEY": secret,
                                           "CLARION_PROVIDER_CA_FILE": ca})
    node.wait_ready()
    node.sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=key,
                            aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))
    yield node
    assert node.stop() == 0
    shutil.rmtree(data, ignore_errors=True)


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def call(url, method, body=None, headers=None):
    """One JSON request: `body` a value to encode as JSON, or bytes sent as they are. Returns (status, the decoded
    answer or None), for error statuses too."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, method=method, data=data,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


class Node:
    """A `clarion serve` process; stops it (SIGTERM) when the test ends."""

    def __init__(self, args, env=None, listen_host="127.0.0.1", preexec_fn=None):
        self.port = free_port()
        if "--data-dir" in args:
            # mkdtemp makes 0700 folders, which the embedded cluster's `postgres` user cannot enter; the node would
            # then place its cluster under /var/lib/clarion (tested in EmbeddedPostgresTests) and leave it there
            # when the test removes the folder.
            os.chmod(args[args.index("--data-dir") + 1], 0o755)
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = dict(os.environ)
        # The tests' emulators listen on loopback, which provider endpoints may reach only when the node allows it
        # (SSRF guard); a test of the guard itself sets this to "".
        full_env.setdefault("CLARION_PROVIDER_ALLOW_HOSTS", "127.0.0.0/8,::1/128")
        full_env.update(env or {})
        for key in ("CLARION_MASTER_KEY", "CLARION_SECRET_ACCESS_KEY"):
            used_secret(full_env.get(key))
        self.log_path = f"/tmp/clarion-e2e-{uuid.uuid4().hex[:8]}.log"
        NODE_LOGS.append(self.log_path)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([CLARION, "serve", "--listen", f"{listen_host}:{self.port}"] + args,
                                     stdout=self.log, stderr=subprocess.STDOUT, env=full_env, preexec_fn=preexec_fn)

    def wait_ready(self, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"clarion exited {self.proc.returncode}: {self.output()}")
            try:
                status, _ = http_get(self.url + "/ready", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"not ready after {timeout}s: {self.output()}")

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=timeout)
        self.log.close()
        return self.proc.returncode


@pytest.fixture
def clarion_bin():
    assert os.access(CLARION, os.X_OK), f"build clarion first: {CLARION}"
    return CLARION


def wait_for(predicate, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


class Emulator:
    """A standalone `clarion emulator` process in a folder of its own (`work`), recording in memory, with demo
    credentials written to `work/demo`. Extra `config` keys go into its JSON configuration, `args` on its command
    line (`--fault ...`, `--tls`). Use as a context manager; it stops and removes its folder on exit."""

    def __init__(self, prefix, args=(), config=None, tls=False, work=None):
        self.work = work or tempfile.mkdtemp(prefix=f"clarion-e2e-{prefix}-")
        self.demo = os.path.join(self.work, "demo")
        base = os.path.join(self.work, "emulator.json")
        with open(base, "w") as f:
            json.dump({"recordInMemory": True, **(config or {})}, f)
        port = free_port()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        self.log = open(os.path.join(self.work, "emulator.log"), "w")
        self.proc = subprocess.Popen([CLARION, "emulator", "--listen", f"127.0.0.1:{port}", "--config", base,
                                      "--write-demo-credentials", self.demo] + (["--tls"] if tls else []) + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def __enter__(self):
        try:
            wait_for(lambda: "listening on" in open(self.log.name).read(), timeout=60, what="the emulator")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)
