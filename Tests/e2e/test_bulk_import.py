"""Issue 20, bulk import and export, end to end against the `clarion` binary: endpoints in (NDJSON, CSV, and the
`clarion endpoints import` command), subscriptions in, endpoints out, with real clients (http.client streaming a
body in chunks, a raw socket cutting an upload off, curl for the export).

Rules checked (docs/api.md, "Bulk import and export"; the merge rule is CreatePlatformEndpoint's, docs/providers.md
C.8, source: the Amazon SNS API reference for CreatePlatformEndpoint and the Developer Guide's "Creating a platform
endpoint"): a token already there with the same attributes is unchanged; with different ones it is refused ("already
exists with the same Token, but different attributes"); an interrupted upload applies nothing; the export imports back.
"""
import http.client
import json
import os
import socket
import subprocess
import tempfile
import time

import boto3
import pytest
from botocore.config import Config

from conftest import CLARION, Node, call, fresh_database, wait_for
from test_http_subscriptions import Receiver, subscribe_and_confirm

KEY = "AKIACLARIONE2EIMPORT1"
SECRET = "e2e-bulk-import-secret-0123456789abcdef"
MASTER_KEY = "YnVsay1pbXBvcnQtZTJlLW1hc3Rlci1rZXktMDAwMDA="
MILLION = 1_000_000


@pytest.fixture(scope="module")
def stack():
    database = fresh_database()
    data = tempfile.mkdtemp(prefix="clarion-e2e-import-node-")
    env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY,
           "CLARION_SUBSCRIPTION_ALLOW_HOSTS": "127.0.0.1/32"}
    node = Node(["--database-url", database, "--data-dir", data], env=env)
    node.wait_ready()
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database], capture_output=True,
                         text=True, timeout=60, env={**os.environ, **env})
    assert key.returncode == 0, key.stderr
    bearer = "Bearer " + key.stdout.split("key: ")[1].strip()
    yield node, bearer, database, env
    assert node.stop() == 0


def create_app(node, bearer, name, platform="GCM", attributes=None):
    body = {"name": name, "platform": platform, "credential": "k", "attributes": attributes or {}}
    if platform.startswith("APNS"):
        body["principal"] = "ABCDE12345"  # the key id of token auth
    status, body = call(node.url + "/v1/applications", "POST", body, {"Authorization": bearer})
    assert status == 201, body


def upload(node, bearer, path, chunks, content_type="application/x-ndjson"):
    """POSTs `chunks` (an iterable of bytes) with Transfer-Encoding: chunked, as a client streaming a file does."""
    connection = http.client.HTTPConnection("127.0.0.1", node.port, timeout=600)
    connection.request("POST", path, body=chunks, encode_chunked=True,
                       headers={"Authorization": bearer, "Content-Type": content_type, "Transfer-Encoding": "chunked"})
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    return response.status, body


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def export(node, bearer, app):
    connection = http.client.HTTPConnection("127.0.0.1", node.port, timeout=600)
    connection.request("GET", f"/v1/applications/{app}/endpoints:export", headers={"Authorization": bearer})
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Transfer-Encoding") == "chunked"
    lines = response.read().splitlines()
    connection.close()
    return lines


def test_a_million_line_import_streams_and_its_export_imports_back(stack):
    node, bearer, _, _ = stack
    create_app(node, bearer, "million")
    # About 150 MB of NDJSON, sent in 1 MiB chunks as it is generated: the client never holds it whole either.
    padding = "p" * 90

    def lines():
        batch = []
        for i in range(MILLION):
            batch.append('{"token":"m-%07d","user_id":"u%d","custom_user_data":"%s"}\n' % (i, i % 1000, padding))
            if len(batch) == 8000:
                yield "".join(batch).encode()
                batch = []
        if batch:
            yield "".join(batch).encode()

    before = peak_rss_kb(node.proc.pid)
    started = time.time()
    status, body = upload(node, bearer, "/v1/applications/GCM:million/endpoints:import", lines())
    took = time.time() - started
    assert status == 200, body
    assert (body["lines"], body["created"], body["refused"]) == (MILLION, MILLION, 0), body
    grown_mb = (peak_rss_kb(node.proc.pid) - before) / 1024
    print(f"1M-line import: {took:.1f} s ({MILLION / took:,.0f} lines/s), peak RSS grew {grown_mb:.0f} MB")
    # The body (about 150 MB) is never held whole: the stream buffers at most 4 MiB, the staging chunks 256 KiB.
    assert grown_mb < 100, f"peak RSS grew {grown_mb:.0f} MB during a ~150 MB upload"

    exported = export(node, bearer, "GCM:million")
    assert len(exported) == MILLION
    first = json.loads(exported[0])
    assert first["token"] == "m-0000000" and first["custom_user_data"] == padding and first["enabled"] is True

    def chunks_of(rows):
        for i in range(0, len(rows), 10000):
            yield b"\n".join(rows[i:i + 10000]) + b"\n"

    # Into the same application: every line unchanged (NativeImportTests also moves an export to another one).
    status, again = upload(node, bearer, "/v1/applications/GCM:million/endpoints:import", chunks_of(exported))
    assert status == 200 and (again["unchanged"], again["created"], again["refused"]) == (MILLION, 0, 0), again


def test_an_interrupted_upload_applies_nothing(stack):
    node, bearer, _, _ = stack
    create_app(node, bearer, "cut")
    body = b"".join(b'{"token":"cut-%06d"}\n' % i for i in range(100_000))
    with socket.create_connection(("127.0.0.1", node.port)) as s:
        s.sendall(b"POST /v1/applications/GCM:cut/endpoints:import HTTP/1.1\r\nHost: a\r\nAuthorization: "
                  + bearer.encode() + b"\r\nContent-Type: application/x-ndjson\r\nContent-Length: "
                  + str(len(body) * 2).encode() + b"\r\n\r\n" + body)
        time.sleep(1)
    # The node logs the import that applied nothing, then the application still has no endpoint.
    wait_for(lambda: "endpoint import applied nothing" in node.output(), what="the aborted import's log line")
    assert export(node, bearer, "GCM:cut") == []
    status, whole = upload(node, bearer, "/v1/applications/GCM:cut/endpoints:import", [body])
    assert status == 200 and whole["created"] == 100_000, whole


def test_csv_duplicates_conflicts_and_malformed_lines(stack):
    node, bearer, _, _ = stack
    create_app(node, bearer, "csv")
    status, body = call(node.url + "/v1/applications/GCM:csv/endpoints", "POST",
                        {"token": "csv-existing", "custom_user_data": "old"}, {"Authorization": bearer})
    assert status == 201
    status, body = call(node.url + "/v1/applications/GCM:csv/endpoints", "POST",
                        {"token": "csv-other", "custom_user_data": "old"}, {"Authorization": bearer})
    assert status == 201
    other = body["id"]
    csv = ("token,custom_user_data,enabled\n"
           "csv-1,a,true\n"
           "csv-existing,old,\n"       # unchanged
           "csv-existing2,\"x\n"       # unterminated quote
           "csv-1,b,true\n"            # duplicate of line 2 with a different value
           "csv-other,new,\n"          # conflicts with the stored endpoint
           "csv-2,,maybe\n")           # enabled must be true or false
    status, body = upload(node, bearer, "/v1/applications/GCM:csv/endpoints:import", [csv.encode()], "text/csv")
    assert status == 200, body
    assert (body["created"], body["unchanged"], body["updated"], body["refused"]) == (1, 1, 0, 4), body
    reasons = {r["line"]: r["reason"] for r in body["refusals"]}
    assert sorted(reasons) == [4, 5, 6, 7]
    assert reasons[5] == "The token is also on line 2, with different fields."
    assert reasons[6] == f"Endpoint {other} already exists with the same token, but different attributes."


def test_the_command_line_imports_a_file(stack):
    node, bearer, database, env = stack
    create_app(node, bearer, "cli", platform="APNS")
    with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False) as f:
        for i in range(1000):
            f.write(json.dumps({"token": "%064x" % i, "user_id": "cli"}) + "\n")
        f.write('{"token":"not-hex"}\n')
    result = subprocess.run([CLARION, "endpoints", "import", "--app", "APNS:cli", f.name, "--database-url", database],
                            capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    os.unlink(f.name)
    assert result.returncode == 1, result.stderr  # one line refused
    summary = json.loads(result.stdout)
    assert (summary["created"], summary["refused"]) == (1000, 1), summary
    assert summary["refusals"][0]["line"] == 1001 and "hexadecimal" in summary["refusals"][0]["reason"]
    assert len(export(node, bearer, "APNS:cli")) == 1000
    missing = subprocess.run([CLARION, "endpoints", "import", "--app", "APNS:none", "x.ndjson", "--database-url", database],
                             capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert missing.returncode == 64


def test_subscriptions_import(stack):
    node, bearer, _, _ = stack
    create_app(node, bearer, "subs")
    status, _ = call(node.url + "/v1/topics", "POST", {"name": "bulk-news"}, {"Authorization": bearer})
    assert status == 201
    lines = "".join('{"token":"s-%d"}\n' % i for i in range(5000)).encode()
    status, body = upload(node, bearer, "/v1/applications/GCM:subs/endpoints:import", [lines])
    assert body["created"] == 5000
    status, body = upload(node, bearer, "/v1/topics/bulk-news/subscriptions:import?application=GCM:subs",
                          [lines + b'{"token":"s-nope"}\n'])
    assert status == 200 and (body["created"], body["refused"]) == (5000, 1), body
    status, body = upload(node, bearer, "/v1/topics/bulk-news/subscriptions:import?application=GCM:subs", [lines])
    assert (body["created"], body["unchanged"]) == (0, 5000), body


def test_imported_endpoints_raise_their_created_events(stack):
    """EventEndpointCreated fires for imported endpoints as for created ones: V017's per-statement trigger sees the
    import's one INSERT, so each new endpoint gets its EndpointCreated event (docs/providers.md C.12), in the import's
    transaction."""
    node, bearer, _, _ = stack
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    receiver = Receiver()
    try:
        topic = sns.create_topic(Name="import-events")["TopicArn"]
        subscribe_and_confirm(sns, receiver, topic, "/events")
        create_app(node, bearer, "evented", attributes={"EventEndpointCreated": topic})
        lines = "".join('{"token":"ev-%d"}\n' % i for i in range(50)).encode()
        status, body = upload(node, bearer, "/v1/applications/GCM:evented/endpoints:import", [lines])
        assert status == 200 and body["created"] == 50, body

        def created_tokens():
            tokens = set()
            for _, raw, _ in receiver.posts("/events", "Notification"):
                event = json.loads(json.loads(raw)["Message"])
                if event["EventType"] == "EndpointCreated":
                    tokens.add(event["Attributes"]["Token"])
            return tokens if len(tokens) >= 50 else None
        assert wait_for(created_tokens, what="50 EndpointCreated events") == {"ev-%d" % i for i in range(50)}
    finally:
        receiver.close()
