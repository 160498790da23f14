"""Publish to delivery, end to end: boto3 against `clarion serve --with-emulator`, deliveries checked at the
emulator's own counters and records (GET /_emulator/stats, /_emulator/records)."""
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request

import boto3
import pytest
from botocore.config import Config

from conftest import CLARION, Node, h2_get, wait_for

KEY = "AKIACLARIONE2EDELIV1"
SECRET = "e2e-delivery-secret-0123456789abcdefghij"



@pytest.fixture(scope="module")
def stack():
    data = tempfile.mkdtemp(prefix="clarion-e2e-delivery-")
    node = Node(["--data-dir", data, "--with-emulator"],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET})
    node.data_dir = data
    node.wait_ready()
    match = re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', node.output().replace("\\/", "/"))
    if not match:
        match = re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', node.output().replace("\\/", "/"))
    assert match, node.output()
    emulator = match.group(1)
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    yield node, sns, emulator, os.path.join(data, "demo")
    assert node.stop() == 0


def applications(sns, emulator, demo):
    apns = json.load(open(os.path.join(demo, "apns.json")))
    p8 = open(os.path.join(demo, apns["keyFile"])).read()
    adm = json.load(open(os.path.join(demo, "adm-client.json")))
    fcm_json = open(os.path.join(demo, "fcm-service-account.json")).read()
    suffix = str(int(time.time() * 1000))
    apps = {
        "APNS": sns.create_platform_application(Name="ios" + suffix, Platform="APNS", Attributes={
            "PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
            "ApplePlatformBundleID": apns["bundleID"], "ProviderEndpoint": emulator})["PlatformApplicationArn"],
        "GCM": sns.create_platform_application(Name="android" + suffix, Platform="GCM", Attributes={
            "PlatformCredential": fcm_json, "ProviderEndpoint": emulator})["PlatformApplicationArn"],
        "ADM": sns.create_platform_application(Name="kindle" + suffix, Platform="ADM", Attributes={
            "PlatformPrincipal": adm["clientID"], "PlatformCredential": adm["clientSecret"],
            "ProviderEndpoint": emulator, "ProviderAuthEndpoint": emulator + "/auth/o2/token"})["PlatformApplicationArn"],
    }
    return apps


def test_topic_publish_reaches_every_endpoint_exactly_once_on_each_platform(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    topic = sns.create_topic(Name="everyone")["TopicArn"]
    tokens = {
        "APNS": [("%064x" % (0xA000 + i)) for i in range(20)],
        "GCM": [f"fcm-token-{i:04d}-" + "x" * 40 for i in range(20)],
        "ADM": [f"amzn1.adm-registration.v3.token{i:04d}" for i in range(20)],
    }
    for platform, arn in apps.items():
        for token in tokens[platform]:
            endpoint = sns.create_platform_endpoint(PlatformApplicationArn=arn, Token=token)["EndpointArn"]
            sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)
    h2_get(emulator + "/_emulator/reset")
    message = sns.publish(TopicArn=topic, Message=json.dumps({
        "default": "hello",
        "APNS": json.dumps({"aps": {"alert": "hello iOS"}}),
        "GCM": json.dumps({"fcmV1Message": {"message": {"notification": {"title": "t", "body": "hello Android"}}}}),
    }), MessageStructure="json")["MessageId"]
    assert len(message) == 36

    def delivered():
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        sends = [r for r in records if r.get("status") == 200 and "token" in r and r.get("token")]
        return sends if len(sends) >= 60 else None

    sends = wait_for(delivered, what="60 deliveries at the emulator")
    time.sleep(1.0)  # anything late would be a duplicate
    records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
    seen = [r["token"] for r in records if r.get("status") == 200 and r.get("token")]
    expected = [t for ts in tokens.values() for t in ts]
    assert sorted(seen) == sorted(expected), "each endpoint exactly once"

    # The message's report, from the command line, beside the running node.
    def report():
        r = subprocess.run([CLARION, "report", message, "--json", "--data-dir", node.data_dir],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)
        return data if data["deliveries"]["accepted"] == 60 else None

    data = wait_for(report, what="the report to count 60 accepted")
    assert data["deliveries"]["targeted"] == 60 and data["deliveries"]["failed"] == 0

    watch = subprocess.run([CLARION, "messages", "watch", message, "--interval", "0.2", "--data-dir", node.data_dir],
                           capture_output=True, text=True, timeout=120)
    assert watch.returncode == 0, watch.stdout + watch.stderr
    assert "100.0% 60/60 Completed accepted 60" in watch.stdout


def test_a_token_the_provider_calls_unregistered_disables_the_endpoint_with_the_reason(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    dead = sns.create_platform_endpoint(PlatformApplicationArn=apps["GCM"], Token="unregistered-e2e-token-0001")["EndpointArn"]
    sns.publish(TargetArn=dead, Message="are you there?")

    def disabled():
        attributes = sns.get_endpoint_attributes(EndpointArn=dead)["Attributes"]
        return attributes if attributes.get("Enabled") == "false" else None

    attributes = wait_for(disabled, what="the endpoint to be disabled")
    # SNS refuses a direct publish to a disabled endpoint.
    with pytest.raises(sns.exceptions.EndpointDisabledException):
        sns.publish(TargetArn=dead, Message="again")
