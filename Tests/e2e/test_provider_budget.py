"""CLARION_PROVIDER_MAX_CONNECTIONS through the binary: a node allowed one provider connection serves four
applications with four pools (APNs and FCM, each at two origins of the same emulator), delivers every endpoint once,
and never holds more than one connection to the emulator (the kernel's count, `ss`, sampled during the fan-out)."""
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
