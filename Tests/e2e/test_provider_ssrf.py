"""Provider endpoints are a tenant's setting, so they are an SSRF vector: any account could point `ProviderEndpoint`
or `ProviderAuthEndpoint` at 127.0.0.1 or a private address and have the gateway send pushes, their authorization
headers and token exchanges there. A node reaches loopback, private and reserved addresses only when its operator
allows them (`CLARION_PROVIDER_ALLOW_HOSTS`, or `--with-emulator` for its own emulator); the refusal is logged."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import boto3
import pytest
from botocore.config import Config

from conftest import CLARION, Emulator, Node, wait_for

KEY = "AKIACLARIONE2ESSRF01"
SECRET = "e2e-ssrf-secret-0123456789abcdefghijklmn"


@pytest.fixture(scope="module")
def emulator():
    with Emulator("ssrf") as e:
        yield e.url, e.demo


def node_with(allow):
    data = tempfile.mkdtemp(prefix="clarion-e2e-ssrf-node-")
    node = Node(["--data-dir", data], env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET,
                                           "CLARION_PROVIDER_ALLOW_HOSTS": allow})
    node.wait_ready()
    node.data_dir = data
    node.sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                            aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    return node


def records(url, token):
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", url + "/_emulator/records"], capture_output=True,
                       text=True, timeout=30)
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip() and json.loads(line).get("token") == token]


def apns_and_adm(sns, url, demo, tag):
    apns = json.load(open(os.path.join(demo, "apns.json")))
    adm = json.load(open(os.path.join(demo, "adm-client.json")))
    ios = sns.create_platform_application(Name="ios-" + tag, Platform="APNS", Attributes={
        "PlatformCredential": open(os.path.join(demo, apns["keyFile"])).read(), "PlatformPrincipal": apns["keyID"],
        "ApplePlatformTeamID": apns["teamID"], "ApplePlatformBundleID": apns["bundleID"],
        "ProviderEndpoint": url})["PlatformApplicationArn"]
    kindle = sns.create_platform_application(Name="kindle-" + tag, Platform="ADM", Attributes={
        "PlatformPrincipal": adm["clientID"], "PlatformCredential": adm["clientSecret"], "ProviderEndpoint": url,
        "ProviderAuthEndpoint": url + "/auth/o2/token"})["PlatformApplicationArn"]
    return ios, kindle


def test_loopback_provider_endpoints_are_refused_unless_the_node_allows_them(emulator):
    url, demo = emulator
    guarded = node_with("")
    try:
        ios, kindle = apns_and_adm(guarded.sns, url, demo, "guarded")
        ios_token, adm_token = "ab" * 32, "amzn1.adm-registration.v3.ssrf-guarded"
        for app, token in [(ios, ios_token), (kindle, adm_token)]:
            endpoint = guarded.sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
            guarded.sns.publish(TargetArn=endpoint, Message="to loopback?")
        # The push connection (APNs) and the token exchange (ADM) are both refused before any byte is sent.
        wait_for(lambda: guarded.output().count("outbound address policy") >= 1, timeout=30, what="the refusal in the log")
        time.sleep(2)
        assert records(url, ios_token) == [] and records(url, adm_token) == []
        out = guarded.output()
        assert "provider connection failed" in out or "access token exchange failed" in out, out[-2000:]
        assert "CLARION_PROVIDER_ALLOW_HOSTS" in out
    finally:
        guarded.stop()
        shutil.rmtree(guarded.data_dir, ignore_errors=True)

    allowed = node_with("127.0.0.0/8")
    try:
        ios, kindle = apns_and_adm(allowed.sns, url, demo, "allowed")
        ios_token, adm_token = "cd" * 32, "amzn1.adm-registration.v3.ssrf-allowed"
        for app, token in [(ios, ios_token), (kindle, adm_token)]:
            endpoint = allowed.sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
            allowed.sns.publish(TargetArn=endpoint, Message="to loopback, allowed")
        wait_for(lambda: records(url, ios_token) and records(url, adm_token), timeout=60, what="both pushes")
    finally:
        assert allowed.stop() == 0
        shutil.rmtree(allowed.data_dir, ignore_errors=True)


def test_an_allow_list_entry_that_is_not_a_host_or_network_is_a_configuration_error(tmp_path):
    r = subprocess.run([CLARION, "config", "print", "--provider-allow-hosts", "10.0.0.0/99"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 78, (r.returncode, r.stdout, r.stderr)
    assert "CLARION_PROVIDER_ALLOW_HOSTS" in r.stderr
