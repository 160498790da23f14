"""Issue 22, finding 10, end to end: a platform application deleted through the SNS API while its messages wait for
a retry. Before schema v12 the retry rows went with the application's endpoints and the messages stayed Processing
for good (shards_done 1/1, pending_retries 0). Now each ends Failed at once, the delivery counted failed with the
reason PlatformApplicationDeleted. The release node talks to a standalone emulator that answers every FCM send 503
with Retry-After: 30, so the retry is still waiting when the application is deleted."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import boto3
import pytest
from botocore.config import Config

from conftest import CLARION, Emulator, Node, fresh_database, wait_for

KEY = "AKIACLARIONE2EFINISH"
SECRET = "e2e-finish-secret-0123456789abcdefghijkl"
MASTER_KEY = "bWVzc2FnZS1maW5pc2hlcy1lMmUtbWFzdGVyLWtleTA="


@pytest.fixture(scope="module")
def emulator():
    with Emulator("finish", args=["--fault", "unavailable=1", "--fault", "retry-after=30",
                                  "--fault", "providers=fcm"]) as e:
        yield e.url, e.demo


def get(url, headers):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
        return json.loads(r.read())


def test_messages_whose_application_is_deleted_with_a_retry_pending_end_failed(emulator):
    url, demo = emulator
    database = fresh_database()
    data = tempfile.mkdtemp(prefix="clarion-e2e-finish-node-")
    env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY}
    node = Node(["--database-url", database, "--data-dir", data], env=env)
    node.wait_ready()
    try:
        sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
        key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database], capture_output=True,
                             text=True, timeout=60, env={**os.environ, **env})
        assert key.returncode == 0, key.stderr
        bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
        app = sns.create_platform_application(Name="finish-android", Platform="GCM", Attributes={
            "PlatformCredential": open(os.path.join(demo, "fcm-service-account.json")).read(),
            "ProviderEndpoint": url})["PlatformApplicationArn"]
        endpoints = [sns.create_platform_endpoint(PlatformApplicationArn=app, Token=f"fcm-finish-{n}")["EndpointArn"]
                     for n in range(5)]
        topic = sns.create_topic(Name="finish")["TopicArn"]
        for endpoint in endpoints:
            sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)
        messages = [sns.publish(TopicArn=topic, Message="to the topic")["MessageId"],
                    sns.publish(TargetArn=endpoints[0], Message="direct")["MessageId"]]

        def status(message):
            return get(node.url + f"/v1/messages/{message}", bearer)

        def waiting(message, retries):
            s = status(message)
            return s if s["shards"] > 0 and s["shards_done"] == s["shards"] and s["pending_retries"] == retries else None

        # The state the finding started from: every shard done, the deliveries waiting for their retry (503).
        wait_for(lambda: waiting(messages[0], 5), timeout=30, what="the topic message's retries")
        wait_for(lambda: waiting(messages[1], 1), timeout=30, what="the direct message's retry")
        sns.delete_platform_application(PlatformApplicationArn=app)
        deleted = time.time()

        def final(message):
            s = status(message)
            return s if s["state"] in ("Completed", "Failed", "Expired") else None

        # Well before the 30 s Retry-After: the retry worker finds the endpoints gone and finishes the messages.
        try:
            topic_status = wait_for(lambda: final(messages[0]), timeout=15, what="the topic message to finish")
            direct_status = wait_for(lambda: final(messages[1]), timeout=15, what="the direct message to finish")
        except AssertionError as e:
            raise AssertionError(f"{e}: {status(messages[0])} {status(messages[1])}") from None
        finished_after = time.time() - deleted
        assert finished_after < 15
        print(f"\nboth messages final {finished_after:.2f} s after DeletePlatformApplication")
        for s, n in [(topic_status, 5), (direct_status, 1)]:
            assert s["state"] == "Failed", s
            assert s["deliveries"]["failed"] == n, s
            assert s["deliveries"]["retried"] == n, s
            assert s["failures_by_reason"] == {"PlatformApplicationDeleted": n}, s
            assert s["pending_retries"] == 0, s
    finally:
        node.stop()
        shutil.rmtree(data, ignore_errors=True)
