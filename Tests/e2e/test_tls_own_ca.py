"""Every credential kind over TLS with a CA the test generates, end to end through the binary we ship.

The test makes its own certificate authority with the openssl CLI and issues the emulator's server certificate from
it (subjectAltName IP:127.0.0.1). `clarion emulator --tls` serves that certificate; it is not self-signed and not
known to the system's trust store, so a node reaches it only by trusting the test's CA, either:
- per application, with the `ProviderCACertificate` attribute (PEM), or
- node-wide, with `CLARION_PROVIDER_CA_FILE`.
Both are tried for each kind: APNs token auth (.p8), APNs certificate auth (client certificate, issued by the demo CA
the emulator trusts), FCM HTTP v1 (the OAuth token exchange at the service account's https `token_uri` goes through
libcurl with the same CA) and ADM (the LWA token at `ProviderAuthEndpoint` over https).
A third node trusts neither: it must not deliver (certificate verification is on), and it must say why.

Rules checked: RFC 5280 path validation against an added trust anchor (the server certificate chains to the test's
CA); RFC 6125 / RFC 2818 identity (the certificate names IP 127.0.0.1); APNs requires TLS 1.2+ with ALPN h2 (A.1 in
docs/providers.md); an FCM OAuth token is fetched from the service account's `token_uri` (RFC 7523 JWT bearer grant).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import boto3
import pytest
from botocore.config import Config

from conftest import Emulator, Node, wait_for

KEY = "AKIACLARIONE2ETLSCA1"
SECRET = "e2e-tls-own-ca-secret-0123456789abcdefg"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca_and_server_certificate(work):
    """A root CA (P-256) and a server certificate for 127.0.0.1 and localhost issued by it."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=Clarion e2e test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=work)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=work)
    with open(os.path.join(work, "server.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=work)
    return os.path.join(work, "ca.pem")


@pytest.fixture(scope="module")
def emulator():
    work = tempfile.mkdtemp(prefix="clarion-e2e-tlsca-")
    ca = make_ca_and_server_certificate(work)
    tls = {"enabled": True, "certificatePath": os.path.join(work, "server.pem"),
           "privateKeyPath": os.path.join(work, "server.key")}
    with Emulator("tlsca", config={"tls": tls}, tls=True, work=work) as e:
        # The emulator serves the test CA's certificate, not a self-signed one: curl trusts it through ca.pem alone.
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca, e.url + "/_emulator/stats"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout == "200", (r.returncode, r.stdout, r.stderr)
        yield {"url": e.url, "ca": ca, "demo": e.demo, "work": work}


def start_node(env=None):
    data = tempfile.mkdtemp(prefix="clarion-e2e-tlsca-node-")
    node = Node(["--data-dir", data], env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET,
                                           "CLARION_PROVIDER_ALLOW_HOSTS": "127.0.0.0/8,::1/128", **(env or {})})
    node.data_dir = data
    node.wait_ready()
    node.sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                            aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    return node


@pytest.fixture(scope="module")
def node_with_attribute():
    node = start_node()
    yield node
    assert node.stop() == 0
    shutil.rmtree(node.data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def node_with_ca_file(emulator):
    node = start_node({"CLARION_PROVIDER_CA_FILE": emulator["ca"]})
    yield node
    assert node.stop() == 0
    shutil.rmtree(node.data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def node_trusting_nothing():
    node = start_node()
    yield node
    assert node.stop() == 0
    shutil.rmtree(node.data_dir, ignore_errors=True)


def read(demo, name):
    with open(os.path.join(demo, name)) as f:
        return f.read()


def attributes(kind, emulator, with_ca):
    """SNS CreatePlatformApplication attributes for one credential kind against the TLS emulator."""
    demo, url = emulator["demo"], emulator["url"]
    if kind == "apns-token":
        apns = json.loads(read(demo, "apns.json"))
        platform, attrs = "APNS", {"PlatformCredential": read(demo, apns["keyFile"]), "PlatformPrincipal": apns["keyID"],
                                   "ApplePlatformTeamID": apns["teamID"], "ApplePlatformBundleID": apns["bundleID"]}
    elif kind == "apns-certificate":
        info = json.loads(read(demo, "apns-certificate.json"))
        platform, attrs = "APNS", {"PlatformPrincipal": read(demo, info["certificateFile"]),
                                   "PlatformCredential": read(demo, info["keyFile"])}
    elif kind == "fcm":
        service_account = read(demo, "fcm-service-account.json")
        assert json.loads(service_account)["token_uri"].startswith("https://127.0.0.1:"), "the OAuth exchange is over TLS"
        platform, attrs = "GCM", {"PlatformCredential": service_account}
    else:
        adm = json.loads(read(demo, "adm-client.json"))
        platform, attrs = "ADM", {"PlatformPrincipal": adm["clientID"], "PlatformCredential": adm["clientSecret"],
                                  "ProviderAuthEndpoint": url + "/auth/o2/token"}
    attrs["ProviderEndpoint"] = url
    if with_ca:
        attrs["ProviderCACertificate"] = read(os.path.dirname(emulator["ca"]), "ca.pem")
    return platform, attrs


TOKENS = {"apns-token": "a1", "apns-certificate": "b2", "fcm": "c3", "adm": "d4"}


def records_for(emulator, token):
    r = subprocess.run(["curl", "-s", "--cacert", emulator["ca"], emulator["url"] + "/_emulator/records"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    return [rec for rec in records if rec.get("token") == token]


def publish_and_wait(node, emulator, kind, with_ca, tag):
    platform, attrs = attributes(kind, emulator, with_ca)
    sns = node.sns
    app = sns.create_platform_application(Name=f"{kind}-{tag}", Platform=platform, Attributes=attrs)["PlatformApplicationArn"]
    token = (TOKENS[kind] + tag) * 16 if platform == "APNS" else f"{kind}-{tag}-device-token"
    token = token[:64] if platform == "APNS" else token
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
    sns.publish(TargetArn=endpoint, Message=f"over TLS with our own CA ({kind}, {tag})")
    return app, token


@pytest.mark.parametrize("kind", ["apns-token", "apns-certificate", "fcm", "adm"])
def test_provider_ca_certificate_attribute(emulator, node_with_attribute, kind):
    app, token = publish_and_wait(node_with_attribute, emulator, kind, with_ca=True, tag="0a")
    records = wait_for(lambda: records_for(emulator, token), timeout=60, what=f"the {kind} push at the emulator")
    assert [r["status"] for r in records] == [200], records
    enabled = node_with_attribute.sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]["Enabled"]
    assert enabled == "true"


@pytest.mark.parametrize("kind", ["apns-token", "apns-certificate", "fcm", "adm"])
def test_node_wide_ca_file(emulator, node_with_ca_file, kind):
    app, token = publish_and_wait(node_with_ca_file, emulator, kind, with_ca=False, tag="0b")
    records = wait_for(lambda: records_for(emulator, token), timeout=60, what=f"the {kind} push at the emulator")
    assert [r["status"] for r in records] == [200], records


@pytest.mark.parametrize("kind", ["apns-token", "fcm"])
def test_without_the_ca_nothing_is_sent_and_the_log_says_why(emulator, node_trusting_nothing, kind):
    app, token = publish_and_wait(node_trusting_nothing, emulator, kind, with_ca=False, tag="0c")
    # Certificate verification is on: the handshake (or, for FCM, the token exchange) fails before any request.
    deadline = time.time() + 20
    while time.time() < deadline and "certificate" not in node_trusting_nothing.output().lower():
        time.sleep(0.5)
    assert records_for(emulator, token) == []
    assert "certificate" in node_trusting_nothing.output().lower(), node_trusting_nothing.output()[-3000:]
