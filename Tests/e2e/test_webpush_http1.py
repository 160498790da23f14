"""Web Push to a push service that speaks HTTP/1.1 only, through the binary we ship. The push service here is not
our emulator but an independent Python server (http.server + ssl, ALPN "http/1.1" only, protocol_version
HTTP/1.1 so connections persist), with a certificate from a CA the test makes. It decrypts every push with PyPI's
`http_ece`, and the test checks each VAPID JWT with `cryptography` (test_webpush's helpers); the subscriptions are
made here as a browser would (a P-256 key pair and a 16-byte auth secret), so nothing of Clarion's checks itself.

Rules checked, and where they come from:
- RFC 8030 section 1 (and 5): a push service is an HTTP server; HTTP/2 is recommended, not required. Clarion offers
  ALPN "h2" and "http/1.1" (RFC 7301 section 3.1) and uses HTTP/1.1 where the server selects it.
- RFC 9112 section 9.3: HTTP/1.1 connections persist unless one side says `Connection: close`: several pushes
  reuse one connection (the server counts the connections that carried requests).
- RFC 8291 / RFC 8188: the plaintext the browser decrypts is the published message, byte for byte.
- RFC 8292 section 2: the VAPID JWT's aud is the push service's origin.
- RFC 8030 section 7.3: 410 Gone for an expired subscription disables the endpoint with the reason.
"""
import base64
import http.server
import json
import os
import ssl
import tempfile
import threading

import http_ece
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import sns_node_trusting, wait_for
from test_tls_own_ca import make_ca_and_server_certificate
from test_webpush import b64u_decode, verify_vapid

KEY = "AKIACLARIONE2EWPH11X"
SECRET = "e2e-webpush-http1-secret-0123456789abcd"


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class PushService:
    """An HTTP/1.1-only Web Push service: subscriptions it knows (id -> browser private key and auth secret),
    what it received, and which connections carried requests."""

    def __init__(self, work):
        self.lock = threading.Lock()
        self.subscriptions = {}
        self.gone = set()
        self.received = []
        self.connections_with_requests = set()
        self.handshakes = 0
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # persistent connections (http.server closes after each answer otherwise)

            def setup(self):
                super().setup()
                with service.lock:
                    service.handshakes += 1
                    self.connection_number = service.handshakes

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sid = self.path.rsplit("/", 1)[-1]
                with service.lock:
                    service.connections_with_requests.add(self.connection_number)
                    known = service.subscriptions.get(sid)
                    gone = sid in service.gone
                if known is None or gone:
                    text = b'{"reason":"subscription expired"}'
                    self.send_response(410 if gone else 404)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                    return
                private_key, auth = known
                plaintext = http_ece.decrypt(body, private_key=private_key, auth_secret=auth, version="aes128gcm")
                with service.lock:
                    service.received.append({"sid": sid, "plaintext": plaintext, "headers": {k.lower(): v for k, v in self.headers.items()},
                                             "connection": self.connection_number})
                self.send_response(201)
                self.send_header("Location", f"https://127.0.0.1:{service.port}/messages/{len(service.received)}")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(work, "server.pem"), os.path.join(work, "server.key"))
        context.set_alpn_protocols(["http/1.1"])  # never h2
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.origin = f"https://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def subscribe(self, sid):
        """What `pushManager.subscribe()` gives a page; the private key stays here, as in a browser."""
        private_key = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        with self.lock:
            self.subscriptions[sid] = (private_key, auth)
        public = private_key.public_key().public_bytes(serialization.Encoding.X962,
                                                        serialization.PublicFormat.UncompressedPoint)
        return {"endpoint": f"{self.origin}/push/{sid}", "keys": {"p256dh": b64u(public), "auth": b64u(auth)}}

    def received_for(self, sid):
        with self.lock:
            return [r for r in self.received if r["sid"] == sid]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def push_service():
    work = tempfile.mkdtemp(prefix="clarion-e2e-webpush-h1-")
    ca = make_ca_and_server_certificate(work)
    service = PushService(work)
    service.ca = ca
    yield service
    service.stop()


@pytest.fixture(scope="module")
def node(push_service):
    yield from sns_node_trusting(push_service.ca, KEY, SECRET, "clarion-e2e-webpush-h1-node-")


def test_webpush_over_http1_keep_alive(push_service, node):
    sns = node.sns
    app = sns.create_platform_application(Name="site-h1", Platform="WEBPUSH",
                                          Attributes={"VAPIDSubject": "mailto:ops@example.com"})["PlatformApplicationArn"]
    vapid_public_key = sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]["VAPIDPublicKey"]

    endpoints = {}
    for sid in ("alice", "bob", "carol"):
        token = json.dumps(push_service.subscribe(sid))
        endpoints[sid] = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]

    # One push after another: each waits for the last, so one keep-alive connection can carry them all.
    sent = {}
    for n, sid in enumerate(["alice", "bob", "carol", "alice", "bob"]):
        payload = json.dumps({"title": "over HTTP/1.1", "n": n, "to": sid, "é": "ü"}, separators=(",", ":"),
                             ensure_ascii=False)
        sns.publish(TargetArn=endpoints[sid], MessageStructure="json",
                    Message=json.dumps({"default": "fallback", "WEBPUSH": payload}),
                    MessageAttributes={"AWS.SNS.MOBILE.WEBPUSH.TTL": {"DataType": "Number", "StringValue": "120"}})
        sent.setdefault(sid, []).append(payload.encode())
        wait_for(lambda: len(push_service.received_for(sid)) == len(sent[sid]) or None, timeout=60,
                 what=f"push {n} at the HTTP/1.1 push service")

    for sid, payloads in sent.items():
        records = push_service.received_for(sid)
        assert [r["plaintext"] for r in records] == payloads, "the browser reads the published bytes exactly"
        for record in records:
            authorization = record["headers"]["authorization"]
            assert authorization.startswith("vapid t=")
            token, key = authorization[len("vapid t="):].split(", k=")
            assert key == vapid_public_key
            verify_vapid(token, vapid_public_key, push_service.origin)
            assert record["headers"]["content-encoding"] == "aes128gcm"
            assert record["headers"]["ttl"] in ("120", "119")
            assert record["headers"]["host"] == f"127.0.0.1:{push_service.port}"
    assert len(push_service.connections_with_requests) == 1, \
        f"five pushes over one keep-alive connection, not {sorted(push_service.connections_with_requests)}"

    # The user unsubscribed: the push service answers 410 and the endpoint is disabled with the reason.
    with push_service.lock:
        push_service.gone.add("carol")
    sns.publish(TargetArn=endpoints["carol"], Message="are you there?")
    disabled = wait_for(lambda: (lambda a: a if a["Enabled"] == "false" else None)(
        sns.get_endpoint_attributes(EndpointArn=endpoints["carol"])["Attributes"]), timeout=60, what="carol disabled")
    assert "410" in disabled["DisabledReason"], disabled
    assert len(push_service.received_for("carol")) == 1, "the 410 push was not decrypted as delivered"
