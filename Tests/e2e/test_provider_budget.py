"""CLARION_PROVIDER_MAX_CONNECTIONS and CLARION_PROVIDER_IDLE_RELEASE through the binary. A node allowed one provider
connection serves four applications with four pools (APNs and FCM, each at two origins of the same emulator),
delivers every endpoint once, and never holds more than one connection to the emulator (the kernel's count, `ss`,
sampled during the fan-out). An application idle for the release time loses its pool and connection, and its next
publish builds them again."""
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.parse

import boto3
from botocore.config import Config

from conftest import Node, h2_get, wait_for

KEY = "AKIACLARIONE2EBUDGET"
SECRET = "e2e-budget-secret-0123456789abcdefghijkl"


def node_connections(pid, port):
    """Established TCP connections of process `pid` whose remote port is `port` (netlink, exact)."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", "dport", f"= :{port}"],
                         capture_output=True, text=True, timeout=10).stdout
    return sum(1 for line in out.splitlines() if f"pid={pid}," in line)


def test_four_pools_on_a_budget_of_one_deliver_everything_over_one_connection_at_a_time():
    data = tempfile.mkdtemp(prefix="clarion-e2e-budget-")
    node = Node(["--data-dir", data, "--with-emulator"],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET,
                     "CLARION_PROVIDER_MAX_CONNECTIONS": "1"})
    node.wait_ready()
    try:
        text = node.output().replace("\\/", "/")
        match = (re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', text)
                 or re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', text))
        assert match, text
        emulator = match.group(1)
        port = urllib.parse.urlparse(emulator).port
        other_origin = emulator.replace("127.0.0.1", "localhost")  # another origin: another pool
        demo = os.path.join(data, "demo")
        apns = json.load(open(os.path.join(demo, "apns.json")))
        p8 = open(os.path.join(demo, apns["keyFile"])).read()
        fcm_json = open(os.path.join(demo, "fcm-service-account.json")).read()
        sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
        apps = []
        for i, origin in enumerate([emulator, other_origin]):
            apps.append(("APNS", sns.create_platform_application(Name=f"ios-{i}", Platform="APNS", Attributes={
                "PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
                "ApplePlatformBundleID": apns["bundleID"], "ProviderEndpoint": origin})["PlatformApplicationArn"]))
            apps.append(("GCM", sns.create_platform_application(Name=f"android-{i}", Platform="GCM", Attributes={
                "PlatformCredential": fcm_json, "ProviderEndpoint": origin})["PlatformApplicationArn"]))
        topic = sns.create_topic(Name="budget")["TopicArn"]
        expected = []
        for n, (platform, arn) in enumerate(apps):
            for i in range(25):
                token = ("%064x" % (0xB0000 + n * 100 + i)) if platform == "APNS" else f"fcm-budget-{n}-{i:03d}-" + "x" * 30
                expected.append(token)
                endpoint = sns.create_platform_endpoint(PlatformApplicationArn=arn, Token=token)["EndpointArn"]
                sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)
        h2_get(emulator + "/_emulator/reset")

        peak = [0]
        samples = [0]
        sampling = threading.Event()
        sampling.set()

        def sample():
            while sampling.is_set():
                peak[0] = max(peak[0], node_connections(node.proc.pid, port))
                samples[0] += 1

        sampler = threading.Thread(target=sample)
        sampler.start()
        sns.publish(TopicArn=topic, Message=json.dumps({
            "default": "hello", "APNS": json.dumps({"aps": {"alert": "budget"}}),
            "GCM": json.dumps({"fcmV1Message": {"message": {"notification": {"title": "t", "body": "budget"}}}}),
        }), MessageStructure="json")

        def delivered():
            records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
            sends = [r["token"] for r in records if r.get("status") == 200 and r.get("token")]
            return sends if len(sends) >= len(expected) else None

        wait_for(delivered, what=f"{len(expected)} deliveries at the emulator")
        time.sleep(1.0)  # anything late would be a duplicate
        sampling.clear()
        sampler.join()
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        seen = [r["token"] for r in records if r.get("status") == 200 and r.get("token")]
        assert sorted(seen) == sorted(expected), "each endpoint exactly once"
        assert samples[0] > 5
        assert 1 <= peak[0] <= 1, f"the node held {peak[0]} provider connections at once on a budget of 1"
    finally:
        assert node.stop() == 0


def test_an_idle_application_loses_its_pool_and_connection_and_gets_them_back_on_the_next_publish():
    data = tempfile.mkdtemp(prefix="clarion-e2e-idle-")
    node = Node(["--data-dir", data, "--with-emulator"],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET,
                     "CLARION_PROVIDER_IDLE_RELEASE": "3"})
    node.wait_ready()
    try:
        text = node.output().replace("\\/", "/")
        match = (re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', text)
                 or re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', text))
        assert match, text
        emulator = match.group(1)
        port = urllib.parse.urlparse(emulator).port
        demo = os.path.join(data, "demo")
        apns = json.load(open(os.path.join(demo, "apns.json")))
        p8 = open(os.path.join(demo, apns["keyFile"])).read()
        sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
        arn = sns.create_platform_application(Name="ios-idle", Platform="APNS", Attributes={
            "PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
            "ApplePlatformBundleID": apns["bundleID"], "ProviderEndpoint": emulator})["PlatformApplicationArn"]
        token = "%064x" % 0xC0FFEE
        endpoint = sns.create_platform_endpoint(PlatformApplicationArn=arn, Token=token)["EndpointArn"]
        h2_get(emulator + "/_emulator/reset")

        def sends():
            records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
            return [r for r in records if r.get("status") == 200 and r.get("token") == token]

        sns.publish(TargetArn=endpoint, Message="first")
        wait_for(lambda: len(sends()) >= 1, what="the first delivery")
        assert node_connections(node.proc.pid, port) >= 1, "the pool keeps its connection while the application is used"
        # Three seconds without a request: the sweep (every second here) releases the client and its pool, whose
        # connection closes, long before the pool's own 600 s idle timeout.
        wait_for(lambda: "idle provider clients released" in node.output(), timeout=30, what="the idle sweep")
        wait_for(lambda: node_connections(node.proc.pid, port) == 0 or None, timeout=30,
                 what="the released pool's connection to close")
        sns.publish(TargetArn=endpoint, Message="second")
        wait_for(lambda: len(sends()) >= 2, what="the second delivery, through a new client")
        assert len(sends()) == 2
    finally:
        assert node.stop() == 0
