"""APNs certificate-based auth end to end: `clarion emulator --tls --write-demo-credentials`, a node, boto3.
The demo client certificate and key go in as SNS takes them (PlatformPrincipal = certificate PEM,
PlatformCredential = private key PEM); the push reaches the emulator over TLS with the certificate and no
provider token. A key of another certificate is refused at CreatePlatformApplication; a certificate the emulator
does not know is 403 BadCertificate and disables the application."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from conftest import Emulator, Node, wait_for

KEY = "AKIACLARIONE2ECERT01"
SECRET = "e2e-certificate-secret-0123456789abcdefgh"


@pytest.fixture(scope="module")
def stack():
    data = tempfile.mkdtemp(prefix="clarion-e2e-cert-node-")
    node = None
    with Emulator("cert", tls=True) as emulator:
        try:
            node = Node(["--data-dir", data], env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET})
            node.wait_ready()
            sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                               aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
            yield sns, emulator.url, emulator.demo, emulator.work
            assert node.stop() == 0
        finally:
            if node is not None:
                node.stop()
            shutil.rmtree(data, ignore_errors=True)


def emulator_get(url, demo, path):
    r = subprocess.run(["curl", "-s", "--cacert", os.path.join(demo, "emulator-cert.pem"), url + path],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def read(demo, name):
    with open(os.path.join(demo, name)) as f:
        return f.read()


def test_certificate_auth_application_sends_with_its_certificate_and_no_token(stack):
    sns, url, demo, _ = stack
    info = json.loads(read(demo, "apns-certificate.json"))
    app = sns.create_platform_application(Name="certios", Platform="APNS", Attributes={
        "PlatformPrincipal": read(demo, info["certificateFile"]), "PlatformCredential": read(demo, info["keyFile"]),
        "ProviderEndpoint": url, "ProviderCACertificate": read(demo, "emulator-cert.pem")})["PlatformApplicationArn"]
    attributes = sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]
    assert attributes["AuthenticationMethod"] == "Certificate"
    assert "PlatformCredential" not in attributes and "PlatformPrincipal" not in attributes
    # SNS C.7: the read-only certificate expiry, ISO 8601 UTC, in the future for the demo certificate.
    expiry = attributes["AppleCertificateExpiryDate"]
    assert time.strptime(expiry, "%Y-%m-%dT%H:%M:%SZ") > time.gmtime(), expiry
    token = "c0" * 32
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
    sns.publish(TargetArn=endpoint, Message="hello over a client certificate")

    def delivered():
        records = [json.loads(line) for line in emulator_get(url, demo, "/_emulator/records").splitlines() if line.strip()]
        return [r for r in records if r.get("token") == token] or None

    records = wait_for(delivered, what="the push at the emulator")
    assert [r["status"] for r in records] == [200], records
    assert "authorization" not in records[0]["headers"], records[0]["headers"]
    assert records[0]["headers"]["apns-topic"] == info["bundleID"], "the topic is the certificate's UID"


def test_a_key_of_another_certificate_is_refused_at_create(stack):
    sns, url, demo, _ = stack
    apns = json.loads(read(demo, "apns.json"))
    with pytest.raises(botocore.exceptions.ClientError) as error:
        sns.create_platform_application(Name="certbad", Platform="APNS", Attributes={
            "PlatformPrincipal": read(demo, "apns-client-certificate.pem"), "PlatformCredential": read(demo, apns["keyFile"]),
            "ProviderEndpoint": url})
    assert error.value.response["Error"]["Code"] == "InvalidParameter"
    assert "does not match the certificate" in error.value.response["Error"]["Message"]


def test_an_unknown_certificate_is_bad_certificate_and_disables_the_application(stack):
    sns, url, demo, work = stack
    key, certificate = os.path.join(work, "stranger.key"), os.path.join(work, "stranger.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/UID=com.example.clarion.demo/CN=stranger"],
                   check=True, capture_output=True)
    app = sns.create_platform_application(Name="certstranger", Platform="APNS", Attributes={
        "PlatformPrincipal": open(certificate).read(), "PlatformCredential": open(key).read(),
        "ProviderEndpoint": url, "ProviderCACertificate": read(demo, "emulator-cert.pem")})["PlatformApplicationArn"]
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="d0" * 32)["EndpointArn"]
    sns.publish(TargetArn=endpoint, Message="hello")

    def disabled():
        return sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]["Enabled"] == "false"

    wait_for(disabled, what="the application to be disabled")
    stats = json.loads(emulator_get(url, demo, "/_emulator/stats"))
    assert stats["endpoints"]["apns"]["reasons"].get("BadCertificate", 0) >= 1, stats
