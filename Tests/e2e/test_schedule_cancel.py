"""Issue 18, end to end: two `clarion serve` processes on one PostgreSQL and a standalone emulator. A topic publish
with `send_at` a few seconds ahead reads Scheduled (nothing sent) until its time, then a node fans it out (600
subscribers are one shard: shards hold 10,000); while it does, `POST /v1/messages/{id}/cancel` is sent to the *other*
node, so the stop crosses processes (PostgreSQL `NOTIFY clarion_cancel`). Two dispatchers working shards of one
message at once are in Tests/ClarionDispatchTests/ScheduleCancelTests.swift. The issue's rule, checked at the emulator's own records: the
fan-out "stops within a second on every node", "the status reads Cancelled with the counts so far", and "deliveries
already accepted by a provider stay counted". The application's ClarionSendRate (per node) keeps the fan-out running
long enough to be cancelled in the middle."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import boto3
from botocore.config import Config

from conftest import CLARION, Emulator, Node, call, fresh_database, wait_for

KEY = "AKIACLARIONE2ESCHED1"
SECRET = "e2e-schedule-secret-0123456789abcdefghij"
MASTER_KEY = "c2NoZWR1bGUtY2FuY2VsLWUyZS1tYXN0ZXIta2V5MDA="
ENDPOINTS = 600
RATE = 40  # per node: about 7 s for everything with two nodes


def h2(url):
    """The emulator speaks HTTP/2 only (h2c)."""
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", url], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def sent_by(node):
    """Pushes this node handed to a provider (`clarion_deliveries_sent_total`, all labels)."""
    text = urllib.request.urlopen(node.url + "/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("clarion_deliveries_sent_total{"))


def test_scheduled_publish_then_cancel_mid_fan_out_on_two_nodes():
    with Emulator("sched") as emulator:
        database = fresh_database()
        dirs = [tempfile.mkdtemp(prefix="clarion-e2e-sched-node-") for _ in range(2)]
        env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY}
        nodes = [Node(["--database-url", database, "--data-dir", d], env=env) for d in dirs]
        try:
            for node in nodes:
                node.wait_ready()
            sns = boto3.client("sns", endpoint_url=nodes[0].url, region_name="us-east-1", aws_access_key_id=KEY,
                               aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
            key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database],
                                 capture_output=True, text=True, timeout=60, env={**os.environ, **env})
            assert key.returncode == 0, key.stderr
            bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
            app = sns.create_platform_application(Name="sched-android", Platform="GCM", Attributes={
                "PlatformCredential": open(os.path.join(emulator.demo, "fcm-service-account.json")).read(),
                "ProviderEndpoint": emulator.url, "ClarionSendRate": str(RATE)})["PlatformApplicationArn"]
            topic = sns.create_topic(Name="sched")["TopicArn"]

            def add(n):
                arn = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=f"fcm-sched-{n}")["EndpointArn"]
                sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=arn)

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(add, range(ENDPOINTS)))

            # Scheduled four seconds ahead, with an offset that is not UTC (RFC 3339 with +02:00).
            send_at = (datetime.now(timezone.utc) + timedelta(seconds=4)).astimezone(timezone(timedelta(hours=2)))
            status, body = call(nodes[1].url + "/v1/publish", "POST",
                                {"targets": [{"topic": topic}], "message": "later", "send_at": send_at.isoformat()},
                                headers=bearer)
            assert status == 202, body
            item = body["messages"][0]
            assert item["state"] == "Scheduled", body
            message = item["id"]

            def state():
                code, s = call(nodes[0].url + f"/v1/messages/{message}", "GET", headers=bearer)
                assert code == 200, s
                return s

            before = state()
            assert before["state"] == "Scheduled" and before["send_at"] is not None, before
            assert not [r for r in h2(emulator.url + "/_emulator/records") if r.get("token", "").startswith("fcm-sched-")]

            # Its time comes: a node works the fan-out (its own counter moves).
            wait_for(lambda: state()["state"] == "Processing", timeout=30, what="the scheduled message to start")
            assert time.time() >= send_at.timestamp() - 0.5
            wait_for(lambda: sent_by(nodes[0]) + sent_by(nodes[1]) >= 40, timeout=30, what="the fan-out to send")
            sender, other = (nodes[0], nodes[1]) if sent_by(nodes[0]) > sent_by(nodes[1]) else (nodes[1], nodes[0])

            code, cancelled = call(other.url + f"/v1/messages/{message}/cancel", "POST", headers=bearer)
            cancelled_at = time.time()
            assert code == 200 and cancelled["state"] == "Cancelled", cancelled
            time.sleep(3.5)

            records = [r for r in h2(emulator.url + "/_emulator/records") if r.get("token", "").startswith("fcm-sched-")]
            late = [r for r in records if r["time"] > cancelled_at + 1]
            assert not late, f"{len(late)} pushes reached the provider more than a second after the cancel"
            assert len(records) < ENDPOINTS, "the fan-out finished before the cancel: the test proves nothing"
            final = state()
            assert final["state"] == "Cancelled", final
            assert final["pending_retries"] == 0 and final["shards_done"] == final["shards"], final
            # Deliveries the provider accepted stay counted, and only those were sent.
            accepted = sum(1 for r in records if r.get("status") == 200)
            assert final["deliveries"]["accepted"] == accepted, (final, accepted)
            assert final["deliveries"]["sent"] == len(records), (final, len(records))
            print(f"\n{len(records)} of {ENDPOINTS} sent before the cancel; last push "
                  f"{max(r['time'] for r in records) - cancelled_at:+.3f} s after it")

            # Idempotent over the API, and through the command line.
            code, again = call(sender.url + f"/v1/messages/{message}/cancel", "POST", headers=bearer)
            assert code == 200 and again["state"] == "Cancelled" and again["deliveries"] == final["deliveries"], again
            cli = subprocess.run([CLARION, "messages", "cancel", message, "--database-url", database],
                                 capture_output=True, text=True, timeout=60, env={**os.environ, **env})
            assert cli.returncode == 0 and "already Cancelled" in cli.stdout, cli.stdout + cli.stderr
        finally:
            for node in nodes:
                node.stop()
            for d in dirs:
                shutil.rmtree(d, ignore_errors=True)
