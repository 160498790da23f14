"""HTTPS on the API port: with CLARION_TLS_CERT and CLARION_TLS_KEY a node serves its API over TLS, through the
binary we ship.

The test makes its own certificate authority with the openssl CLI and issues a server certificate for 127.0.0.1 from
it (as test_tls_own_ca.py does for the emulator). The node serves that certificate; clients trust it through the
CA file alone: curl (--cacert) for /health, boto3 (verify=CA path) for an SNS action, signed with SigV4.

Rules checked: RFC 8446 / RFC 5246 (TLS 1.2+ handshake), RFC 5280 path validation against the test's CA, RFC 2818 /
RFC 6125 identity (the certificate names IP 127.0.0.1), RFC 7301 ALPN (a client offering h2 and http/1.1, as curl
does, is given http/1.1: the port speaks HTTP/1.1 only). A plain-HTTP request to the TLS port gets no HTTP answer: the
handshake fails and the connection closes.
"""
import os
import socket
import subprocess
import tempfile
import time

import boto3
from botocore.config import Config

from conftest import Node, fresh_database
from test_tls_own_ca import make_ca_and_server_certificate

KEY = "AKIACLARIONE2EHTTPS1"
SECRET = "e2e-https-api-secret-0123456789abcdefgh"
MASTER_KEY = "A" * 43 + "="


def curl(*args):
    return subprocess.run(["curl", "-sS", *args], capture_output=True, text=True, timeout=30)


def test_api_port_serves_https_with_the_configured_certificate_and_nothing_in_plain_http():
    work = tempfile.mkdtemp(prefix="clarion-e2e-https-")
    ca = make_ca_and_server_certificate(work)
    node = Node(["--database-url", fresh_database(), "--role", "api"],
                env={"CLARION_MASTER_KEY": MASTER_KEY, "CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET,
                     "CLARION_TLS_CERT": os.path.join(work, "server.pem"),
                     "CLARION_TLS_KEY": os.path.join(work, "server.key")})
    https = f"https://127.0.0.1:{node.port}"
    try:
        deadline = time.time() + 60
        while True:
            assert node.proc.poll() is None, node.output()
            r = curl("-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca, https + "/ready")
            if r.stdout == "200":
                break
            assert time.time() < deadline, (r.returncode, r.stdout, r.stderr, node.output())
            time.sleep(0.2)

        # curl offers ALPN h2 and http/1.1; the node must pick http/1.1, the protocol it speaks.
        r = curl("-i", "--cacert", ca, "-w", "\n%{http_version}", https + "/health")
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("HTTP/1.1 200"), r.stdout
        assert '{"status":"ok"}' in r.stdout and r.stdout.endswith("\n1.1"), r.stdout

        # Without the CA the certificate does not verify (it is not in the system store): TLS really is on.
        r = curl("-o", "/dev/null", https + "/health")
        assert r.returncode == 60, (r.returncode, r.stderr)  # CURLE_PEER_FAILED_VERIFICATION

        # An SNS action over HTTPS, SigV4-signed by botocore, verifying the server against the CA file.
        sns = boto3.client("sns", endpoint_url=https, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, verify=ca, config=Config(retries={"max_attempts": 1}))
        arn = sns.create_topic(Name="https-e2e")["TopicArn"]
        assert arn.endswith(":https-e2e")
        assert arn in [t["TopicArn"] for t in sns.list_topics()["Topics"]]

        # Plain HTTP to the TLS port: no HTTP answer, the connection is closed (the handshake fails).
        with socket.create_connection(("127.0.0.1", node.port), timeout=5) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
            received = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                received += chunk
        assert not received.startswith(b"HTTP/"), received
        assert b"200" not in received and b"status" not in received, received

        # The node still serves TLS afterwards.
        r = curl("-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca, https + "/health")
        assert r.stdout == "200", (r.stdout, r.stderr)
        assert "BEGIN" not in node.output()  # no key or certificate material in the log
    finally:
        node.stop()


def test_a_certificate_without_its_key_or_a_mismatched_key_is_a_configuration_error_not_plain_http():
    """Exit 78 (EX_CONFIG) with the setting named: a node never falls back to plain HTTP when TLS was asked for."""
    work = tempfile.mkdtemp(prefix="clarion-e2e-https-bad-")
    make_ca_and_server_certificate(work)
    cert, key, ca_key = (os.path.join(work, name) for name in ("server.pem", "server.key", "ca.key"))
    for env in ({"CLARION_TLS_CERT": cert}, {"CLARION_TLS_CERT": cert, "CLARION_TLS_KEY": ca_key}):
        node = Node(["--database-url", fresh_database(), "--role", "api"], env={"CLARION_MASTER_KEY": MASTER_KEY, **env})
        try:
            assert node.proc.wait(timeout=60) == 78, node.output()
            output = node.output()
            assert "CLARION_TLS_CERT" in output and "CLARION_TLS_KEY" in output, output
            assert "BEGIN" not in output  # no key material in the message
        finally:
            node.stop()
