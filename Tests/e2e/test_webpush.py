"""Web Push end to end through the binary we ship: boto3 makes a WEBPUSH application and endpoints, publishes, and
the test reads what a browser's service worker would receive by decrypting the push service's raw recorded body
itself, with the `cryptography` package and again with PyPI's `http_ece`: not by trusting the emulator's decryption.

The emulator plays the push service over TLS with a CA the test makes (as test_tls_own_ca.py does): it issues the
subscription (and hands the test the browser's private key, which a browser would keep), decrypts and checks every
push (VAPID, aud, exp, aes128gcm) and records the plaintext and the raw body.

Rules checked, and where they come from:
- RFC 8291 section 3.3/3.4 and RFC 8188 section 2: the key derivation and the single aes128gcm record ending with
  the 0x02 padding delimiter; the keyid is the sender's 65-octet ephemeral key (section 4).
- RFC 8292 section 2 and 3: `Authorization: vapid t=<ES256 JWT>, k=<uncompressed key>`, aud = the push service's
  origin, exp at most 24 hours ahead, sub a mailto: contact; k is the application's VAPIDPublicKey.
- RFC 8030 section 5.2/5.3: TTL and Urgency headers; section 7.3: 410 for an unsubscribed subscription, which
  disables the endpoint with the reason.
"""
import base64
import hashlib
import hmac
import json
import os
import tempfile
import time

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from conftest import Emulator, curl_with_ca, sns_node_trusting, wait_for
from test_tls_own_ca import make_ca_and_server_certificate

KEY = "AKIACLARIONE2EWEBPSH"
SECRET = "e2e-webpush-secret-0123456789abcdefghij"


def b64u_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.fixture(scope="module")
def emulator():
    work = tempfile.mkdtemp(prefix="clarion-e2e-webpush-")
    ca = make_ca_and_server_certificate(work)
    tls = {"enabled": True, "certificatePath": os.path.join(work, "server.pem"),
           "privateKeyPath": os.path.join(work, "server.key")}
    with Emulator("webpush", config={"tls": tls}, tls=True, work=work) as e:
        yield {"url": e.url, "ca": ca}


@pytest.fixture(scope="module")
def node(emulator):
    yield from sns_node_trusting(emulator["ca"], KEY, SECRET, "clarion-e2e-webpush-node-")


def curl(emulator, method, path):
    return curl_with_ca(emulator, method, path)


def subscribe(emulator):
    """What `pushManager.subscribe()` gives a page (plus the browser's private key, for decrypting here)."""
    subscription = json.loads(curl(emulator, "POST", "/_emulator/webpush/subscriptions"))
    private_key = serialization.load_der_private_key(b64u_decode(subscription.pop("browserPrivateKey")), password=None)
    return subscription, private_key


def records(emulator, subscription):
    sid = subscription["endpoint"].rsplit("/", 1)[1]
    lines = curl(emulator, "GET", "/_emulator/records").splitlines()
    return [r for r in map(json.loads, filter(None, lines)) if r["endpoint"] == "webpush" and r.get("token") == sid]


def hkdf(salt, ikm, info, length):
    """RFC 5869 with SHA-256, one block (all RFC 8291 needs)."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()[:length]


def decrypt_as_a_browser(body, private_key, subscription):
    """RFC 8291 section 3.4 from the user agent's side, written here from the RFC with `cryptography` only."""
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    assert idlen == 65, "keyid is the sender's uncompressed P-256 key (RFC 8291 section 4)"
    as_public = body[21:86]
    ciphertext = body[86:]
    assert len(ciphertext) <= rs, "one record (RFC 8291 section 4)"
    ua_public = b64u_decode(subscription["keys"]["p256dh"])
    auth = b64u_decode(subscription["keys"]["auth"])
    sender = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public)
    ecdh_secret = private_key.exchange(ec.ECDH(), sender)
    ikm = hkdf(auth, ecdh_secret, b"WebPush: info\x00" + ua_public + as_public, 32)
    cek = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    record = AESGCM(cek).decrypt(nonce, ciphertext, None)
    stripped = record.rstrip(b"\x00")
    assert stripped[-1:] == b"\x02", "the last record ends with the 0x02 delimiter (RFC 8188 section 2)"
    return stripped[:-1]


def verify_vapid(token, public_key_b64, origin):
    """RFC 8292: an ES256 JWT (raw r||s signature, RFC 7518 section 3.4) over header.claims, checked with k."""
    header_b64, claims_b64, signature_b64 = token.split(".")
    header, claims = json.loads(b64u_decode(header_b64)), json.loads(b64u_decode(claims_b64))
    assert header["alg"] == "ES256" and header.get("typ") == "JWT"
    raw = b64u_decode(signature_b64)
    assert len(raw) == 64
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64u_decode(public_key_b64))
    key.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
               f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    assert claims["aud"] == origin
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600 + 60
    assert claims["sub"] == "mailto:ops@example.com"


def test_webpush_application_endpoint_publish_and_unsubscribe(emulator, node):
    sns = node.sns
    app = sns.create_platform_application(Name="site", Platform="WEBPUSH",
                                          Attributes={"VAPIDSubject": "mailto:ops@example.com"})["PlatformApplicationArn"]
    attributes = sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]
    vapid_public_key = attributes["VAPIDPublicKey"]
    assert len(b64u_decode(vapid_public_key)) == 65 and "PlatformCredential" not in attributes

    subscription, private_key = subscribe(emulator)
    token = json.dumps(subscription)
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
    # The same subscription, written in another member order, is the same endpoint.
    again = json.dumps({"keys": subscription["keys"], "endpoint": subscription["endpoint"]}, indent=1)
    assert sns.create_platform_endpoint(PlatformApplicationArn=app, Token=again)["EndpointArn"] == endpoint
    shown = sns.get_endpoint_attributes(EndpointArn=endpoint)["Attributes"]["Token"]
    assert subscription["keys"]["auth"] not in shown and subscription["keys"]["p256dh"] not in shown

    # An http:// subscription is refused by rule.
    with pytest.raises(sns.exceptions.InvalidParameterException, match="endpoint-https"):
        sns.create_platform_endpoint(PlatformApplicationArn=app,
                                     Token=json.dumps({**subscription, "endpoint": "http://127.0.0.1/x"}))

    payload = {"title": "Hello", "body": "from Clarion, through boto3", "n": 1}
    sns.publish(TargetArn=endpoint, MessageStructure="json",
                Message=json.dumps({"default": "fallback", "WEBPUSH": json.dumps(payload, separators=(",", ":"))}),
                MessageAttributes={"AWS.SNS.MOBILE.WEBPUSH.TTL": {"DataType": "Number", "StringValue": "300"},
                                   "AWS.SNS.MOBILE.WEBPUSH.URGENCY": {"DataType": "String", "StringValue": "high"}})
    [record] = wait_for(lambda: records(emulator, subscription), timeout=60, what="the push at the push service")
    assert record["status"] == 201, record
    assert record["headers"]["ttl"] in ("300", "299") and record["headers"]["urgency"] == "high"
    assert record["headers"]["content-encoding"] == "aes128gcm"
    body = b64u_decode(record["body"])
    plaintext = decrypt_as_a_browser(body, private_key, subscription)
    assert json.loads(plaintext) == payload
    assert plaintext.decode() == record["payload"], "the emulator decrypted the same bytes"
    # A second, independent implementation of RFC 8188/8291 (PyPI http_ece) reads the same body.
    import http_ece
    assert http_ece.decrypt(body, private_key=private_key, auth_secret=b64u_decode(subscription["keys"]["auth"]),
                            version="aes128gcm") == plaintext
    verify_vapid(record["vapidToken"], vapid_public_key, emulator["url"])

    # A topic publish with only default: the documented notification JSON.
    topic = sns.create_topic(Name="news")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)
    sns.publish(TopicArn=topic, Message="Breaking news")
    both = wait_for(lambda: (lambda r: r if len(r) >= 2 else None)(records(emulator, subscription)), timeout=60,
                    what="the topic push")
    assert json.loads(decrypt_as_a_browser(b64u_decode(both[1]["body"]), private_key, subscription)) == \
        {"notification": {"body": "Breaking news"}}

    # The user unsubscribes: the push service answers 410 and the endpoint is disabled with the reason.
    curl(emulator, "DELETE", "/_emulator/webpush/subscriptions/" + subscription["endpoint"].rsplit("/", 1)[1])
    sns.publish(TargetArn=endpoint, Message="are you there?")
    disabled = wait_for(lambda: (lambda a: a if a["Enabled"] == "false" else None)(
        sns.get_endpoint_attributes(EndpointArn=endpoint)["Attributes"]), timeout=60, what="the endpoint disabled")
    assert "410" in disabled["DisabledReason"], disabled
