"""`clarion serve --dev` (issue 16, "A development mode"), end to end with boto3: any SigV4 access key acts for the
default account, POST /_clarion/reset empties every resource, the emulator runs beside the node and applications
without a ProviderEndpoint send to it, the API binds to loopback unless --listen says otherwise, and --dev with a
database URL is refused unless --dev-allow-shared-database."""
import json
import os
import re
import secrets
import shutil
import socket
import string
import subprocess
import tempfile
import time
import urllib.request

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from conftest import CLARION, Node, call, free_port, fresh_database, http_get, wait_for
from test_delivery import h2_get


# A database URL needs a master key (CLARION_MASTER_KEY); dev mode does not change that.
MASTER_KEY = {"CLARION_MASTER_KEY": "ZGV2LW1vZGUtZTJlLW1hc3Rlci1rZXktMDEyMzQ1Njc="}


def random_key():
    """An access key id and secret no node was ever told about."""
    alphabet = string.ascii_uppercase + string.digits
    return "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16)), secrets.token_urlsafe(30)


def sns_client(url, key, secret):
    return boto3.client("sns", endpoint_url=url, region_name="us-east-1", aws_access_key_id=key,
                        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))


def dev_node(extra=(), env=None, embedded=False):
    """A `serve --dev` node; `embedded`: as a developer runs it, on the embedded PostgreSQL under the data directory."""
    data = tempfile.mkdtemp(prefix="clarion-e2e-dev-")
    database = [] if embedded else ["--database-url", fresh_database(), "--dev-allow-shared-database"]
    node = Node(["--dev", "--data-dir", data] + database + list(extra), env=None if embedded else {**MASTER_KEY, **(env or {})})
    node.data_dir = data
    node.wait_ready()
    return node


def emulator_url(node):
    out = node.output().replace("\\/", "/")
    match = re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', out) \
        or re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', out)
    assert match, out
    return match.group(1)


def non_loopback_address():
    """This machine's address on its default route (no packet is sent), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_any_access_key_acts_for_the_default_account_and_reset_empties_everything():
    node = dev_node()
    try:
        assert "DEVELOPMENT MODE" in node.output(), node.output()
        # And on standard output after the ready line (which follows /ready by a moment).
        wait_for(lambda: "DEVELOPMENT MODE (--dev): any access key acts for account 123456789012" in node.output(),
                 timeout=15, what="the dev mode line on standard output")
        first = sns_client(node.url, *random_key())
        second = sns_client(node.url, *random_key())
        topic = first.create_topic(Name="dev-orders")["TopicArn"]
        assert topic == "arn:aws:sns:us-east-1:123456789012:dev-orders", "the default account"
        # Another unknown key is the same account: it sees the topic.
        assert topic in [t["TopicArn"] for t in second.list_topics()["Topics"]]
        app = second.create_platform_application(Name="dev-android", Platform="GCM", Attributes={
            "PlatformCredential": json.dumps({"type": "service_account", "project_id": "p", "private_key": "x",
                                              "client_email": "a@p.iam.gserviceaccount.com"})})["PlatformApplicationArn"]
        endpoint = first.create_platform_endpoint(PlatformApplicationArn=app, Token="dev-token-" + "x" * 40)["EndpointArn"]
        first.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)

        # The signature is parsed and its scope held: a credential scoped to something that is not a region name is
        # refused; another region is served, as its own region (docs/api.md, "Regions").
        key, secret = random_key()
        def scoped(region):
            return boto3.client("sns", endpoint_url=node.url, region_name=region, aws_access_key_id=key,
                                aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))
        with pytest.raises(botocore.exceptions.ClientError) as error:
            scoped("mars-base").list_topics()
        assert error.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
        assert scoped("eu-west-1").list_topics()["Topics"] == []

        status, body = call(node.url + "/_clarion/reset", "POST")
        assert status == 200 and body["reset"] is True and body["tables_emptied"] > 5, body
        assert first.list_topics()["Topics"] == []
        assert first.list_platform_applications()["PlatformApplications"] == []
        with pytest.raises(botocore.exceptions.ClientError) as error:
            first.get_endpoint_attributes(EndpointArn=endpoint)
        assert error.value.response["Error"]["Code"] == "NotFound"
        # The node goes on working after a reset; the same names can be made again.
        assert first.create_topic(Name="dev-orders")["TopicArn"] == topic
        assert "resources reset" in node.output()
    finally:
        assert node.stop() == 0
        shutil.rmtree(node.data_dir, ignore_errors=True)


def test_without_dev_an_unknown_key_is_refused_and_reset_is_not_served():
    key, secret = "AKIACLARIONE2EPRODKY", "e2e-production-secret-0123456789abcdef"
    node = Node(["--database-url", fresh_database()],
                env={**MASTER_KEY, "CLARION_ACCESS_KEY_ID": key, "CLARION_SECRET_ACCESS_KEY": secret})
    node.wait_ready()
    try:
        with pytest.raises(botocore.exceptions.ClientError) as error:
            sns_client(node.url, *random_key()).list_topics()
        assert error.value.response["Error"]["Code"] == "InvalidClientTokenId"
        sns_client(node.url, key, secret).create_topic(Name="kept")
        status, _ = call(node.url + "/_clarion/reset", "POST")
        assert status == 404
        assert len(sns_client(node.url, key, secret).list_topics()["Topics"]) == 1, "nothing was reset"
        assert "DEVELOPMENT MODE" not in node.output()
    finally:
        assert node.stop() == 0


def test_applications_without_an_endpoint_of_their_own_send_to_the_emulator():
    node = dev_node(embedded=True)
    try:
        emulator = emulator_url(node)
        demo = os.path.join(node.data_dir, "demo")
        sns = sns_client(node.url, *random_key())
        apns = json.load(open(os.path.join(demo, "apns.json")))
        p8 = open(os.path.join(demo, apns["keyFile"])).read()
        # No ProviderEndpoint: in dev mode that is the emulator, not Apple.
        app = sns.create_platform_application(Name="dev-ios", Platform="APNS", Attributes={
            "PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
            "ApplePlatformBundleID": apns["bundleID"]})["PlatformApplicationArn"]
        fcm = sns.create_platform_application(Name="dev-android", Platform="GCM", Attributes={
            "PlatformCredential": open(os.path.join(demo, "fcm-service-account.json")).read()})["PlatformApplicationArn"]
        token = "%064x" % time.time_ns()
        endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
        fcm_token = "dev-fcm-" + "y" * 40
        fcm_endpoint = sns.create_platform_endpoint(PlatformApplicationArn=fcm, Token=fcm_token)["EndpointArn"]
        sns.publish(TargetArn=endpoint, Message="to the emulator")
        sns.publish(TargetArn=fcm_endpoint, Message="to the emulator too")

        def arrived():
            records = h2_get(emulator + "/_emulator/records")
            return token in records and fcm_token in records
        wait_for(arrived, timeout=60, what="both pushes at the emulator")
        # An application that names its own endpoint keeps it (here one where nothing listens: the send fails).
        dead = f"http://127.0.0.1:{free_port()}"
        own = sns.create_platform_application(Name="dev-own", Platform="APNS", Attributes={
            "PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
            "ApplePlatformBundleID": apns["bundleID"], "ProviderEndpoint": dead})["PlatformApplicationArn"]
        own_token = "%064x" % (time.time_ns() + 1)
        own_endpoint = sns.create_platform_endpoint(PlatformApplicationArn=own, Token=own_token)["EndpointArn"]
        sns.publish(TargetArn=own_endpoint, Message="not to the emulator")
        time.sleep(3)
        assert own_token not in h2_get(emulator + "/_emulator/records")
        # Reset clears the emulator's records too.
        assert call(node.url + "/_clarion/reset", "POST")[0] == 200
        assert token not in h2_get(emulator + "/_emulator/records")
    finally:
        assert node.stop() == 0
        shutil.rmtree(node.data_dir, ignore_errors=True)


def test_dev_mode_binds_to_loopback_unless_listen_says_otherwise():
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to try")
    database = fresh_database()
    data = tempfile.mkdtemp(prefix="clarion-e2e-dev-")
    os.chmod(data, 0o755)
    port = free_port()
    env = dict(os.environ, CLARION_LISTEN=f"0.0.0.0:{port}", **MASTER_KEY)
    log_path = os.path.join(data, "node.log")
    with open(log_path, "w") as log:
        # CLARION_LISTEN from the environment (as a deployment's clarion.env would give it) says 0.0.0.0.
        proc = subprocess.Popen([CLARION, "serve", "--dev", "--database-url", database, "--dev-allow-shared-database",
                                 "--data-dir", data], stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(lambda: proc.poll() is not None or _answers("127.0.0.1", port), timeout=90, what="the dev node on loopback")
            assert proc.poll() is None, open(log_path).read()
            wait_for(lambda: http_get(f"http://127.0.0.1:{port}/ready")[0] == 200, timeout=60, what="ready")
            assert not _answers(address, port), f"dev mode answered on {address}"
            assert "listens on loopback only" in open(log_path).read()
        finally:
            proc.terminate()
            assert proc.wait(timeout=60) == 0
    # --listen is the user's explicit word.
    node = Node(["--dev", "--database-url", database, "--dev-allow-shared-database", "--data-dir", data],
                env=MASTER_KEY, listen_host="0.0.0.0")
    try:
        node.wait_ready()
        assert _answers(address, node.port)
        assert http_get(f"http://{address}:{node.port}/ready")[0] == 200
    finally:
        assert node.stop() == 0
        shutil.rmtree(data, ignore_errors=True)


def _answers(host, port):
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_dev_mode_with_a_database_url_is_refused_unless_allowed():
    result = subprocess.run([CLARION, "serve", "--dev", "--database-url", "postgresql://127.0.0.1:1/none",
                             "--listen", f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 78, result.stderr
    assert "--dev-allow-shared-database" in result.stderr
