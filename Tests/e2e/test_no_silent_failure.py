"""No silent failure, end to end: boto3 against `clarion serve --with-emulator` on the test run's PostgreSQL.
Settings the provider pool cannot load are refused at CreatePlatformApplication and SetPlatformApplicationAttributes
(InvalidParameter naming the attribute); what the dispatcher disables at a delivery is one warning in the node's
log, shows as DisabledReason / DisabledAt in the SNS attributes and in `clarion apps list`, and Enabled=true clears
it."""
import json
import os
import re
import subprocess
import tempfile
import time

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from conftest import CLARION, Node, fresh_database, wait_for

KEY = "AKIACLARIONE2ESILENT"
SECRET = "e2e-silent-secret-0123456789abcdefghijkl"
MASTER_KEY = "c2lsZW50LWZhaWx1cmUtZTJlLW1hc3Rlci1rZXktMzI="
# PEM-shaped, base64 that decodes, but no certificate in it: a PEM check passes, OpenSSL reads nothing.
GARBAGE_CA = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"


@pytest.fixture(scope="module")
def stack():
    url = fresh_database()
    data = tempfile.mkdtemp(prefix="clarion-e2e-silent-")
    env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY}
    node = Node(["--database-url", url, "--data-dir", data, "--with-emulator"], env=env)
    node.wait_ready()
    match = re.search(r'"url":"(http:[^"]+)"', "\n".join(
        line for line in node.output().replace("\\/", "/").splitlines() if "provider emulator running" in line))
    assert match, node.output()
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    fcm_json = open(os.path.join(data, "demo", "fcm-service-account.json")).read()
    yield node, sns, match.group(1), fcm_json, url, env
    assert node.stop() == 0


def log_lines(node):
    out = []
    for line in node.output().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def invalid_parameter(call):
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        call()
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameter", error
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return error["Message"]


# Rule: a ProviderCACertificate the provider pool cannot load (judged by the pool's own code) is refused at
# CreatePlatformApplication and at SetPlatformApplicationAttributes with InvalidParameter naming the attribute,
# instead of an application that is disabled at its first delivery; nothing is stored.
def test_a_garbage_provider_ca_is_refused_at_create_and_at_set(stack):
    node, sns, emulator, fcm_json, _, _ = stack
    message = invalid_parameter(lambda: sns.create_platform_application(Name="bad-ca", Platform="GCM", Attributes={
        "PlatformCredential": fcm_json, "ProviderEndpoint": emulator, "ProviderCACertificate": GARBAGE_CA}))
    assert "ProviderCACertificate" in message, message
    names = [a["PlatformApplicationArn"] for a in sns.list_platform_applications()["PlatformApplications"]]
    assert not any(n.endswith("/bad-ca") for n in names), names

    arn = sns.create_platform_application(Name="good-ca", Platform="GCM", Attributes={
        "PlatformCredential": fcm_json, "ProviderEndpoint": emulator})["PlatformApplicationArn"]
    message = invalid_parameter(lambda: sns.set_platform_application_attributes(
        PlatformApplicationArn=arn, Attributes={"ProviderCACertificate": GARBAGE_CA}))
    assert "ProviderCACertificate" in message, message
    attributes = sns.get_platform_application_attributes(PlatformApplicationArn=arn)["Attributes"]
    assert "ProviderCACertificate" not in attributes and attributes["Enabled"] == "true", attributes


# Rule (no silent failure): an application disabled at its first delivery by a configuration error, and an
# endpoint disabled by the provider's answer, are each one warning in the node's log with the reason (never the
# whole token), show DisabledReason / DisabledAt through SNS and in `clarion apps list`, and Enabled=true clears them.
def test_what_the_dispatcher_disables_is_logged_shown_and_cleared(stack):
    node, sns, emulator, fcm_json, url, env = stack
    suffix = str(int(time.time() * 1000))
    # A legacy server key is taken at create (only a send can judge credentials) and cannot send: the first
    # delivery disables the application.
    legacy_name = "legacy" + suffix
    legacy = sns.create_platform_application(Name=legacy_name, Platform="GCM", Attributes={
        "PlatformCredential": "AAAA-legacy-server-key", "ProviderEndpoint": emulator})["PlatformApplicationArn"]
    first = sns.create_platform_endpoint(PlatformApplicationArn=legacy, Token="fcm-token-silent-0001-" + "x" * 30)["EndpointArn"]
    given_up = sns.publish(TargetArn=first, Message="hello")["MessageId"]

    def disabled():
        attributes = sns.get_platform_application_attributes(PlatformApplicationArn=legacy)["Attributes"]
        return attributes if attributes["Enabled"] == "false" else None

    attributes = wait_for(disabled, what="the legacy-key application disabled")
    assert "PlatformCredential" in attributes["DisabledReason"], attributes
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", attributes["DisabledAt"]), attributes

    good = sns.create_platform_application(Name="good" + suffix, Platform="GCM", Attributes={
        "PlatformCredential": fcm_json, "ProviderEndpoint": emulator})["PlatformApplicationArn"]
    dead_token = "unregistered-silent-" + suffix
    dead = sns.create_platform_endpoint(PlatformApplicationArn=good, Token=dead_token)["EndpointArn"]
    sns.publish(TargetArn=dead, Message="are you there?")

    def endpoint_disabled():
        attributes = sns.get_endpoint_attributes(EndpointArn=dead)["Attributes"]
        return attributes if attributes["Enabled"] == "false" else None

    endpoint = wait_for(endpoint_disabled, what="the unregistered endpoint disabled")
    assert endpoint["DisabledReason"].startswith("UNREGISTERED") and endpoint["DisabledAt"], endpoint

    def warnings(msg):
        return [line for line in log_lines(node) if line.get("msg") == msg and line.get("level") == "warning"]

    wait_for(lambda: warnings("endpoint disabled") and warnings("message given up"), timeout=30, what="the warnings")
    apps = [w for w in warnings("platform application disabled") if w.get("application") == legacy_name]
    assert len(apps) == 1, apps
    assert "PlatformCredential" in apps[0]["reason"] and apps[0]["platform"] == "GCM", apps[0]
    endpoints = [w for w in warnings("endpoint disabled") if w.get("endpoint") == dead.rsplit("/", 1)[1]]
    assert len(endpoints) == 1, endpoints
    assert endpoints[0]["reason"].startswith("UNREGISTERED") and endpoints[0]["provider_status"] == "404", endpoints[0]
    messages = [w for w in warnings("message given up") if w.get("message") == given_up]
    assert len(messages) == 1 and messages[0]["state"] == "Failed", messages
    assert dead_token not in node.output(), "a whole device token in the log"

    listing = subprocess.run([CLARION, "apps", "list", "--database-url", url], capture_output=True, text=True,
                             timeout=120, env={**os.environ, **env})
    assert listing.returncode == 0, listing.stderr
    rows = [line.split("\t") for line in listing.stdout.splitlines()]
    assert rows[0][:4] == ["MOBILE APP", "MOBILE APP ID", "PLATFORM APPLICATION", "STATE"], rows[0]
    row = next(r for r in rows if r[2] == "GCM:" + legacy_name)
    assert row[0] == "-" and row[3] == "disabled" and row[4] == attributes["DisabledAt"], row
    assert "PlatformCredential" in row[5], row
    assert next(r for r in rows if r[2] == "GCM:good" + suffix)[3] == "enabled"

    sns.set_platform_application_attributes(PlatformApplicationArn=legacy, Attributes={"Enabled": "true"})
    sns.set_endpoint_attributes(EndpointArn=dead, Attributes={"Enabled": "true"})
    again = sns.get_platform_application_attributes(PlatformApplicationArn=legacy)["Attributes"]
    assert again["Enabled"] == "true" and "DisabledReason" not in again and "DisabledAt" not in again, again
    endpoint = sns.get_endpoint_attributes(EndpointArn=dead)["Attributes"]
    assert endpoint["Enabled"] == "true" and "DisabledReason" not in endpoint, endpoint
