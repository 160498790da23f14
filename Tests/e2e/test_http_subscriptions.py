"""Issue 16, HTTP/HTTPS subscriptions, end to end: boto3 against the node, and real HTTP and HTTPS servers in the
test as subscribers. The receiver verifies every signed document independently, the way SNS's client libraries
do (fetch the SigningCertURL, build the string to sign, verify the RSA signature), with Python `cryptography`.

Rules checked, from the Amazon SNS Developer Guide (docs/providers.md C.11):
- C.11.1 "Fanout to HTTP/S endpoints" / "Confirm your subscription": a new http/https subscription is
  "pending confirmation"; SNS POSTs a SubscriptionConfirmation with Token and SubscribeURL; visiting the
  SubscribeURL or calling ConfirmSubscription(TopicArn, Token) confirms it.
- C.11.2 "Parsing message formats": the JSON members of SubscriptionConfirmation and Notification, Subject only when
  published with one, MessageAttributes as {"Type", "Value"}; the x-amz-sns-message-type, x-amz-sns-message-id,
  x-amz-sns-topic-arn and x-amz-sns-subscription-arn headers.
- C.11.3 "Verifying the signatures of Amazon SNS messages": SignatureVersion 1 = SHA1withRSA, 2 = SHA256withRSA (topic
  attribute SignatureVersion), over "name\\nvalue\\n" for Message, MessageId, Subject (if present), Timestamp,
  TopicArn, Type (a confirmation: Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn, Type).
- C.11.4 "Amazon SNS message delivery retries": the healthyRetryPolicy schedule (numRetries, minDelayTarget, ...).
- C.11.5 "Amazon SNS raw message delivery": RawMessageDelivery=true sends the bare message, x-amz-sns-rawdelivery: true.
- C.11.6 UnsubscribeURL in each Notification unsubscribes the endpoint.
- The outbound address policy (SSRF, docs/security.md) refuses a link-local address such as the cloud metadata
  service, visibly: the log says why and the subscription stays pending.
"""
import base64
import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from conftest import CLARION, Node, fresh_database, http_get, wait_for
from test_tls_own_ca import make_ca_and_server_certificate

KEY = "AKIACLARIONE2EHTTPSUB"
SECRET = "e2e-http-subscriptions-secret-0123456789"
MASTER_KEY = "aHR0cC1zdWJzY3JpcHRpb25zLWUyZS1tYXN0ZXIta2U="


class Receiver:
    """A real HTTP (or HTTPS) server in a thread that records every POST. `fail[path] = n` answers the next n
    POSTs to that path with 500."""

    def __init__(self, tls=None):
        self.requests = []
        self.fail = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode()
                with receiver.lock:
                    receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()))
                    failing = receiver.fail.get(self.path, 0)
                    if failing > 0:
                        receiver.fail[self.path] = failing - 1
                self.send_response(500 if failing > 0 else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if tls else "http"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}{path}"

    def posts(self, path, kind=None):
        with self.lock:
            return [(h, b, t) for p, h, b, t in self.requests
                    if p == path and (kind is None or h.get("x-amz-sns-message-type") == kind)]

    def wait(self, path, kind, count=1, timeout=60):
        return wait_for(lambda: self.posts(path, kind)[count - 1:] and self.posts(path, kind), timeout=timeout,
                        what=f"{count} {kind} POST(s) at {path}")

    def close(self):
        self.server.shutdown()


def verify(document, node_url):
    """As SNS's client libraries verify: the certificate comes from the SigningCertURL (which must be the node's
    own), the string to sign is built from the document, the signature checked with the certificate's key."""
    cert_url = document["SigningCertURL"]
    assert cert_url.startswith(node_url + "/"), cert_url
    status, pem = http_get(cert_url)
    assert status == 200
    certificate = x509.load_pem_x509_certificate(pem.encode())
    if document["Type"] == "Notification":
        names = ["Message", "MessageId"] + (["Subject"] if "Subject" in document else []) + ["Timestamp", "TopicArn", "Type"]
    else:
        names = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
    string_to_sign = "".join(f"{name}\n{document[name]}\n" for name in names).encode()
    digest = {"1": hashes.SHA1(), "2": hashes.SHA256()}[document["SignatureVersion"]]
    certificate.public_key().verify(base64.b64decode(document["Signature"]), string_to_sign, padding.PKCS1v15(), digest)
    # A tampered document does not verify.
    with pytest.raises(Exception):
        certificate.public_key().verify(base64.b64decode(document["Signature"]), string_to_sign + b"x",
                                        padding.PKCS1v15(), digest)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", document["Timestamp"]), document["Timestamp"]


@pytest.fixture(scope="module")
def stack():
    work = tempfile.mkdtemp(prefix="clarion-e2e-httpsub-")
    ca = make_ca_and_server_certificate(work)
    database = fresh_database()
    env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY,
           # The receivers listen on 127.0.0.1, which the SSRF guard refuses unless allowed; nothing else is.
           "CLARION_SUBSCRIPTION_ALLOW_HOSTS": "127.0.0.1/32",
           # The HTTPS receiver's certificate is issued by the test's CA.
           "CLARION_PROVIDER_CA_FILE": ca}
    node = Node(["--database-url", database, "--data-dir", work], env=env)
    node.wait_ready()
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database], capture_output=True,
                         text=True, timeout=60, env={**os.environ, **env})
    assert key.returncode == 0, key.stderr
    bearer = "Bearer " + key.stdout.split("key: ")[1].strip()
    plain = Receiver()
    secure = Receiver(tls=(os.path.join(work, "server.pem"), os.path.join(work, "server.key")))
    yield node, sns, plain, secure, bearer
    plain.close()
    secure.close()
    assert node.stop() == 0


def message_status(node, bearer, message):
    request = urllib.request.Request(node.url + f"/v1/messages/{message}", headers={"Authorization": bearer})
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())


def finished_status(node, bearer, message):
    return wait_for(lambda: (lambda s: s if s["state"] not in ("Enqueued", "Processing") else None)(
        message_status(node, bearer, message)), what="the message to finish")


def subscribe_and_confirm(sns, receiver, topic, path, attributes=None):
    pending = sns.subscribe(TopicArn=topic, Protocol=receiver.scheme, Endpoint=receiver.url(path),
                            Attributes=attributes or {})
    assert pending["SubscriptionArn"] == "pending confirmation"
    confirmation = json.loads(receiver.wait(path, "SubscriptionConfirmation")[-1][1])
    status, body = http_get(confirmation["SubscribeURL"])
    assert status == 200, body
    arn = re.search(r"<SubscriptionArn>([^<]+)</SubscriptionArn>", body).group(1)
    return arn, confirmation


def test_subscribe_confirm_by_subscribe_url_and_receive_verified_notifications_v1_and_v2(stack):
    node, sns, plain, _, bearer = stack
    topic = sns.create_topic(Name="http-news")["TopicArn"]
    path = "/news"
    pending = sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=plain.url(path))
    assert pending["SubscriptionArn"] == "pending confirmation"
    # Listed as PendingConfirmation until confirmed (D.1).
    listed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert [s["SubscriptionArn"] for s in listed] == ["PendingConfirmation"]
    assert listed[0]["Protocol"] == "http" and listed[0]["Endpoint"] == plain.url(path)

    headers, body, _ = plain.wait(path, "SubscriptionConfirmation")[-1]
    confirmation = json.loads(body)
    assert list(confirmation) == ["Type", "MessageId", "Token", "TopicArn", "Message", "SubscribeURL", "Timestamp",
                                  "SignatureVersion", "Signature", "SigningCertURL"]
    assert confirmation["Type"] == "SubscriptionConfirmation" and confirmation["TopicArn"] == topic
    assert headers["x-amz-sns-message-type"] == "SubscriptionConfirmation"
    assert headers["x-amz-sns-message-id"] == confirmation["MessageId"]
    assert headers["x-amz-sns-topic-arn"] == topic
    assert confirmation["SignatureVersion"] == "1"
    verify(confirmation, node.url)

    status, answer = http_get(confirmation["SubscribeURL"])
    assert status == 200 and "<ConfirmSubscriptionResponse" in answer, answer
    arn = re.search(r"<SubscriptionArn>([^<]+)</SubscriptionArn>", answer).group(1)
    assert arn.startswith(topic + ":")
    attributes = sns.get_subscription_attributes(SubscriptionArn=arn)["Attributes"]
    assert attributes["PendingConfirmation"] == "false" and attributes["Protocol"] == "http"
    # SNS's default HTTP/S policy: 3 retries, 20 s apart (C.11.4).
    effective = json.loads(attributes["EffectiveDeliveryPolicy"])["healthyRetryPolicy"]
    assert (effective["numRetries"], effective["minDelayTarget"], effective["maxDelayTarget"]) == (3, 20, 20)
    assert [s["SubscriptionArn"] for s in sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]] == [arn]
    # The native API shows the same subscription with its protocol and URL.
    request = urllib.request.Request(node.url + "/v1/subscriptions/" + arn.split(":")[-1], headers={"Authorization": bearer})
    with urllib.request.urlopen(request, timeout=10) as r:
        native = json.loads(r.read())
    assert (native["protocol"], native["url"], native["pending_confirmation"], native["endpoint"]) == \
        ("http", plain.url(path), False, None), native

    # SignatureVersion 1 (the default), with a Subject and message attributes.
    published = sns.publish(TopicArn=topic, Message="first news", Subject="Breaking",
                            MessageAttributes={"sport": {"DataType": "String", "StringValue": "rugby"},
                                               "price": {"DataType": "Number", "StringValue": "12.5"}})
    headers, body, _ = plain.wait(path, "Notification")[-1]
    note = json.loads(body)
    assert list(note) == ["Type", "MessageId", "TopicArn", "Subject", "Message", "Timestamp", "SignatureVersion",
                          "Signature", "SigningCertURL", "UnsubscribeURL", "MessageAttributes"]
    assert note["MessageId"] == published["MessageId"] and note["Message"] == "first news" and note["Subject"] == "Breaking"
    assert note["MessageAttributes"] == {"price": {"Type": "Number", "Value": "12.5"},
                                         "sport": {"Type": "String", "Value": "rugby"}}
    assert headers["x-amz-sns-message-type"] == "Notification"
    assert headers["x-amz-sns-message-id"] == published["MessageId"]
    assert headers["x-amz-sns-topic-arn"] == topic and headers["x-amz-sns-subscription-arn"] == arn
    assert headers["content-type"].startswith("text/plain")
    assert note["SignatureVersion"] == "1"
    verify(note, node.url)
    status = finished_status(node, bearer, published["MessageId"])
    assert status["state"] == "Completed", status

    # SignatureVersion 2 = SHA256withRSA; no Subject member when published without one.
    sns.set_topic_attributes(TopicArn=topic, AttributeName="SignatureVersion", AttributeValue="2")
    second = sns.publish(TopicArn=topic, Message='second "news"\nwith a newline')
    headers, body, _ = plain.wait(path, "Notification", count=2)[-1]
    note = json.loads(body)
    assert note["MessageId"] == second["MessageId"] and "Subject" not in note and "MessageAttributes" not in note
    assert note["SignatureVersion"] == "2"
    verify(note, node.url)
    with pytest.raises(ClientError) as refused:
        sns.set_topic_attributes(TopicArn=topic, AttributeName="SignatureVersion", AttributeValue="3")
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"


def test_https_subscription_confirmed_by_the_confirm_subscription_action_with_raw_delivery(stack):
    node, sns, _, secure, bearer = stack
    topic = sns.create_topic(Name="https-raw")["TopicArn"]
    path = "/raw"
    assert sns.subscribe(TopicArn=topic, Protocol="https", Endpoint=secure.url(path),
                         Attributes={"RawMessageDelivery": "true"})["SubscriptionArn"] == "pending confirmation"
    confirmation = json.loads(secure.wait(path, "SubscriptionConfirmation")[-1][1])
    verify(confirmation, node.url)
    # A token that is not the subscription's is refused (SNS: InvalidParameter "Invalid token").
    with pytest.raises(ClientError) as refused:
        sns.confirm_subscription(TopicArn=topic, Token="0" * 64)
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"
    arn = sns.confirm_subscription(TopicArn=topic, Token=confirmation["Token"])["SubscriptionArn"]
    assert arn.startswith(topic + ":")
    assert sns.get_subscription_attributes(SubscriptionArn=arn)["Attributes"]["RawMessageDelivery"] == "true"

    published = sns.publish(TopicArn=topic, Message='{"raw": true}', Subject="ignored in raw delivery")
    headers, body, _ = secure.wait(path, "Notification")[-1]
    # C.11.5: the body is the message itself, and the header says so.
    assert body == '{"raw": true}'
    assert headers["x-amz-sns-rawdelivery"] == "true"
    assert headers["x-amz-sns-message-id"] == published["MessageId"]
    assert headers["x-amz-sns-subscription-arn"] == arn
    assert finished_status(node, bearer, published["MessageId"])["state"] == "Completed"


def test_unsubscribe_url_unsubscribes(stack):
    node, sns, plain, _, _ = stack
    topic = sns.create_topic(Name="http-leaving")["TopicArn"]
    path = "/leaving"
    arn, _ = subscribe_and_confirm(sns, plain, topic, path)
    sns.publish(TopicArn=topic, Message="before")
    note = json.loads(plain.wait(path, "Notification")[-1][1])
    unsubscribe = note["UnsubscribeURL"]
    # The URL needs the subscription's token: another token is refused and the subscription stays.
    forged = re.sub(r"Token=[0-9a-f]+", "Token=" + "1" * 64, unsubscribe)
    status, _ = http_get(forged)
    assert status == 200  # an unknown token names no subscription: nothing to do, as SNS's Unsubscribe
    assert [s["SubscriptionArn"] for s in sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]] == [arn]
    status, answer = http_get(unsubscribe)
    assert status == 200 and "<UnsubscribeResponse" in answer, answer
    assert sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []
    with pytest.raises(ClientError) as gone:
        sns.get_subscription_attributes(SubscriptionArn=arn)
    assert gone.value.response["Error"]["Code"] == "NotFound"


def test_a_failing_receiver_is_retried_on_the_delivery_policy_schedule(stack):
    node, sns, plain, _, bearer = stack
    topic = sns.create_topic(Name="http-flaky")["TopicArn"]
    path = "/flaky"
    policy = {"healthyRetryPolicy": {"numRetries": 3, "minDelayTarget": 1, "maxDelayTarget": 1, "backoffFunction": "linear"}}
    arn, _ = subscribe_and_confirm(sns, plain, topic, path, {"DeliveryPolicy": json.dumps(policy)})
    plain.fail[path] = 2
    published = sns.publish(TopicArn=topic, Message="eventually")
    posts = plain.wait(path, "Notification", count=3)
    assert [json.loads(b)["MessageId"] for _, b, _ in posts] == [published["MessageId"]] * 3
    # C.11.4: each retry waits minDelayTarget (1 s) at least.
    times = [t for _, _, t in posts]
    assert all(later - earlier >= 0.9 for earlier, later in zip(times, times[1:])), times
    status = finished_status(node, bearer, published["MessageId"])
    assert status["state"] == "Completed", status
    # The message's status counts the HTTP delivery like any other: accepted once, after 2 retries.
    assert (status["deliveries"]["targeted"], status["deliveries"]["accepted"], status["deliveries"]["retried"],
            status["deliveries"]["failed"]) == (1, 1, 2, 0), status

    # A receiver that never answers 2xx: the first attempt and numRetries retries, then failed for good, counted.
    sns.set_subscription_attributes(SubscriptionArn=arn, AttributeName="DeliveryPolicy", AttributeValue=json.dumps(
        {"healthyRetryPolicy": {"numRetries": 1, "minDelayTarget": 1, "maxDelayTarget": 1}}))
    plain.fail[path] = 1000
    before = len(plain.posts(path, "Notification"))
    failed = sns.publish(TopicArn=topic, Message="never")
    status = finished_status(node, bearer, failed["MessageId"])
    assert status["state"] == "Failed", status
    assert len(plain.posts(path, "Notification")) - before == 2
    assert status["deliveries"]["failed"] == 1 and status["failures_by_reason"] == {"HTTPDeliveryFailed": 1}, status
    assert "http subscription delivery failed for good" in node.output()
    plain.fail[path] = 0

    # SNS refuses a policy it cannot follow (C.11.4: minDelayTarget <= maxDelayTarget).
    with pytest.raises(ClientError) as refused:
        sns.set_subscription_attributes(SubscriptionArn=arn, AttributeName="DeliveryPolicy", AttributeValue=json.dumps(
            {"healthyRetryPolicy": {"numRetries": 3, "minDelayTarget": 30, "maxDelayTarget": 10}}))
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"


def test_the_ssrf_policy_refuses_the_metadata_address_visibly(stack):
    node, sns, _, _, _ = stack
    topic = sns.create_topic(Name="http-ssrf")["TopicArn"]
    url = "http://169.254.169.254/latest/meta-data/"
    assert sns.subscribe(TopicArn=topic, Protocol="http", Endpoint=url)["SubscriptionArn"] == "pending confirmation"
    wait_for(lambda: "refused by the outbound address policy" in node.output(), what="the refusal in the log")
    line = [l for l in node.output().splitlines() if "refused by the outbound address policy" in l][-1]
    assert "169.254.169.254" in line
    listed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert [s["SubscriptionArn"] for s in listed] == ["PendingConfirmation"]
    # A URL of the wrong scheme for the protocol is refused at Subscribe.
    with pytest.raises(ClientError) as refused:
        sns.subscribe(TopicArn=topic, Protocol="https", Endpoint="http://127.0.0.1:1/")
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"


def test_filter_policies_apply_to_http_subscribers_and_count_filtered(stack):
    node, sns, plain, _, bearer = stack
    topic = sns.create_topic(Name="http-filtered")["TopicArn"]
    # SNS's string matching (docs/providers.md C.10): only the subscriber whose policy matches gets the message.
    subscribe_and_confirm(sns, plain, topic, "/rugby", {"FilterPolicy": json.dumps({"sport": ["rugby"]})})
    subscribe_and_confirm(sns, plain, topic, "/golf", {"FilterPolicy": json.dumps({"sport": ["golf"]})})
    published = sns.publish(TopicArn=topic, Message="match day",
                            MessageAttributes={"sport": {"DataType": "String", "StringValue": "rugby"}})
    plain.wait("/rugby", "Notification")
    status = finished_status(node, bearer, published["MessageId"])
    assert status["state"] == "Completed", status
    assert (status["deliveries"]["accepted"], status["deliveries"]["filtered"], status["deliveries"]["failed"]) == (1, 1, 0)
    assert plain.posts("/golf", "Notification") == []


def test_pending_deliveries_survive_a_restart(stack):
    """The queue is in PostgreSQL: a delivery waiting for its retry when the node stops is sent by the next node."""
    _, _, plain, _, _ = stack
    database = fresh_database()
    work = tempfile.mkdtemp(prefix="clarion-e2e-httpsub-restart-")
    env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY,
           "CLARION_SUBSCRIPTION_ALLOW_HOSTS": "127.0.0.1/32"}
    first = Node(["--database-url", database, "--data-dir", work], env=env)
    first.wait_ready()
    sns = boto3.client("sns", endpoint_url=first.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    topic = sns.create_topic(Name="http-restart")["TopicArn"]
    path = "/restart"
    policy = {"healthyRetryPolicy": {"numRetries": 5, "minDelayTarget": 3, "maxDelayTarget": 3}}
    subscribe_and_confirm(sns, plain, topic, path, {"DeliveryPolicy": json.dumps(policy)})
    status, pem_before = http_get(first.url + "/sns/signing-certificate.pem")
    assert status == 200
    plain.fail[path] = 1000
    published = sns.publish(TopicArn=topic, Message="outlives the node")
    plain.wait(path, "Notification")
    assert first.stop() == 0
    plain.fail[path] = 0
    failed_posts = len(plain.posts(path, "Notification"))

    second = Node(["--database-url", database, "--data-dir", work], env=env)
    try:
        second.wait_ready()
        posts = plain.wait(path, "Notification", count=failed_posts + 1)
        note = json.loads(posts[-1][1])
        assert note["MessageId"] == published["MessageId"]
        # The signing key is the installation's, not the node's: the certificate is the same after the restart.
        status, pem_after = http_get(second.url + "/sns/signing-certificate.pem")
        assert status == 200 and pem_after == pem_before
        verify(note, second.url)
    finally:
        assert second.stop() == 0
