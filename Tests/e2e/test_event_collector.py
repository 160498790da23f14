"""Issue "Hardening" findings 3 and 11 end to end against `clarion serve --with-emulator`: the public event
collector refuses by default to redirect a user's pushes to another device (checked at the emulator with a
user-targeted publish), lets the app's API token do it, can require the token on every event (set by
`clarion apps create` and PATCH), logs and counts (`/metrics`) each reassignment without the full token; and a registration webhook
carries an x-clarion-signature that the verification in docs/api.md accepts."""
import hashlib
import hmac
import http.server
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import urllib.request

import boto3
import pytest
from botocore.config import Config

from conftest import CLARION, Node, wait_for, call, http_get
from test_delivery import KEY, SECRET, applications, h2_get

REFUSED_MOVE = ("authorization: firebase.registration_token is bound to another user_id; moving it needs the mobile "
                "app's API token (Authorization: Bearer <token>)")
TOKEN_REQUIRED = "authentication: this mobile app requires its API token (Authorization: Bearer <token>)"


@pytest.fixture(scope="module")
def stack():
    data = tempfile.mkdtemp(prefix="clarion-e2e-events-")
    node = Node(["--data-dir", data, "--with-emulator", "--webhook-allow-private", "true"],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET})
    node.data_dir = data
    node.wait_ready()
    output = node.output().replace("\\/", "/")
    match = re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', output) \
        or re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', output)
    assert match, output
    emulator = match.group(1)
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    apps = applications(sns, emulator, os.path.join(data, "demo"))
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--data-dir", data], capture_output=True, text=True,
                         timeout=60)
    assert key.returncode == 0, key.stderr
    bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
    yield node, emulator, "GCM:" + apps["GCM"].rsplit("/", 1)[1], bearer
    assert node.stop() == 0



def event(project, user, token, model="Pixel 8"):
    return {"user_id": user, "event_type": "fcm_registration_token_registered",
            "event_timestamp": "2026-11-30T12:00:00Z", "version": "1",
            "app": {"id": "com.example.shop", "name": "Shop", "version": "2.1.0", "language": "en"},
            "os": {"type": "android", "version": "14"}, "device": {"manufacturer": "Google", "model": model},
            "firebase": {"project_id": project, "registration_token": token}}


def delivered(emulator, stamp):
    records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
    return [r for r in records if stamp in (r.get("token") or "") and r.get("status") == 200]


def reassignments(node):
    """clarion_mobile_token_reassignments_total by outcome, from the node's /metrics."""
    status, text = http_get(node.url + "/metrics")
    assert status == 200, text
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r'^clarion_mobile_token_reassignments_total\{outcome="(\w+)"\} (\S+)$', text, re.M)}


def publish_to(node, bearer, fcm_app, user, text):
    status, accepted = call(node.url + "/v1/publish", "POST", {
        "targets": [{"user": {"app": fcm_app, "user_id": user}}], "message": text}, bearer)
    assert status == 202, accepted


def log_lines(node, message):
    lines = []
    for line in node.output().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("message") == message or entry.get("msg") == message:
            lines.append(entry)
    return lines


def test_an_anonymous_event_cannot_redirect_a_users_pushes_but_the_app_token_can_move_a_device(stack):
    node, emulator, fcm_app, bearer = stack
    stamp = str(time.time_ns())
    project = "proj-guard-" + stamp
    status, app = call(node.url + "/v1/mobile-apps", "POST", {"name": "guard-" + stamp, "fcm_application": fcm_app,
                                                             "firebase_project_id": project}, bearer)
    assert status == 201, app
    assert app["events_require_api_token"] is False and app["events_require_api_token_for_user_change"] is True
    status, token = call(node.url + f"/v1/mobile-apps/{app['id']}/tokens", "POST", {}, bearer)
    assert status == 201, token

    victim, mallory = "victim-" + stamp, "mallory-" + stamp
    victim_token = f"fcm-victim-{stamp}-" + "v" * 120
    mallory_token = f"fcm-mallory-{stamp}-" + "m" * 120
    assert call(node.url + "/meiro_mobile", "POST", event(project, victim, victim_token))[0] == 200
    assert call(node.url + "/meiro_mobile", "POST", event(project, mallory, mallory_token, model="Galaxy"))[0] == 200

    counted_before = reassignments(node)
    # The attacker's own token under the victim's user_id, then the victim's token under the attacker's.
    for path, body in [("/meiro_mobile", event(project, victim, mallory_token, model="Galaxy")),
                       ("/v1/events", event(project, mallory, victim_token))]:
        status, answer = call(node.url + path, "POST", body)
        assert (status, answer) == (403, {"message": REFUSED_MOVE, "status": "error"})

    publish_to(node, bearer, fcm_app, victim, "for the victim")
    got = wait_for(lambda: delivered(emulator, stamp), what="the victim's push")
    time.sleep(1.0)
    assert [r["token"] for r in delivered(emulator, stamp)] == [victim_token], "the attacker's device gets nothing"
    assert got

    # With the app's API token the move is made: the device now belongs to the victim's user_id.
    status, answer = call(node.url + "/meiro_mobile", "POST", event(project, victim, mallory_token, model="Galaxy"),
                          {"Authorization": "Bearer " + token["token"]})
    assert (status, answer) == (200, {"status": "ok"})
    publish_to(node, bearer, fcm_app, victim, "for both devices")
    wait_for(lambda: len(delivered(emulator, stamp)) == 3 or None, what="the second publish at both devices")
    assert sorted(r["token"] for r in delivered(emulator, stamp)) == sorted([victim_token, victim_token, mallory_token])

    # Issue 22 finding 3: a metric for each reassignment, refused or made.
    counted = reassignments(node)
    assert counted["refused"] - counted_before["refused"] == 2
    assert counted["allowed"] - counted_before["allowed"] == 1
    # Each reassignment, refused or made, is a warning with the token's prefix only.
    refused = [e for e in log_lines(node, "event token reassignment refused") if e.get("app") == app["id"]]
    allowed = [e for e in log_lines(node, "event token reassigned") if e.get("app") == app["id"]]
    assert len(refused) == 2 and len(allowed) == 1, node.output()[-4000:]
    assert all(e["level"] == "warning" for e in refused + allowed)
    assert {(e["from_user"], e["to_user"], e["authenticated"]) for e in refused} == {(mallory, victim, "false"),
                                                                                   (victim, mallory, "false")}
    assert (allowed[0]["from_user"], allowed[0]["to_user"], allowed[0]["authenticated"]) == (mallory, victim, "true")
    assert allowed[0]["token"] == mallory_token[:8] + "\u2026"
    output = node.output()
    assert mallory_token not in output and victim_token not in output, "no full device token in the logs"
    assert token["token"] not in output, "no API token in the logs"


def test_clarion_apps_create_can_require_the_api_token_on_events(stack):
    node, emulator, fcm_app, bearer = stack
    stamp = str(time.time_ns())
    project = "proj-locked-" + stamp
    created = subprocess.run([CLARION, "apps", "create", "--name", "locked-" + stamp, "--fcm", fcm_app,
                              "--firebase-project-id", project, "--events-require-api-token",
                              "--data-dir", node.data_dir], capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    assert "EventsRequireApiToken: true" in created.stdout
    app_id = created.stdout.split("MobileAppId: ")[1].split()[0]
    status, app = call(node.url + f"/v1/mobile-apps/{app_id}", "GET", None, bearer)
    assert status == 200 and app["events_require_api_token"] is True, app

    device = f"fcm-locked-{stamp}"
    status, answer = call(node.url + "/v1/events", "POST", event(project, "u-" + stamp, device))
    assert (status, answer) == (401, {"message": TOKEN_REQUIRED, "status": "error"})
    token = subprocess.run([CLARION, "apps", "create-token", app_id, "--data-dir", node.data_dir],
                           capture_output=True, text=True, timeout=60)
    assert token.returncode == 0, token.stderr
    api_token = token.stdout.split("ApiToken: ")[1].strip()
    status, answer = call(node.url + "/v1/events", "POST", event(project, "u-" + stamp, device),
                          {"Authorization": "Bearer " + api_token})
    assert (status, answer) == (200, {"status": "ok"})
    status, endpoints = call(node.url + f"/v1/applications/{fcm_app}/endpoints", "GET", None, bearer)
    assert status == 200 and [e for e in endpoints["items"] if e.get("token") == device], endpoints

    # Turned off again: anonymous events are accepted as before.
    status, app = call(node.url + f"/v1/mobile-apps/{app_id}", "PATCH", {"events_require_api_token": False}, bearer)
    assert status == 200 and app["events_require_api_token"] is False, app
    assert call(node.url + "/v1/events", "POST", event(project, "u-" + stamp, device + "-2", model="Other"))[0] == 200


def verify(header, body, api_token, tolerance=300):
    """docs/api.md's verification, verbatim."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    t, v1 = fields.get("t", ""), fields.get("v1", "")
    if not t.isdigit() or abs(time.time() - int(t)) > tolerance:
        return False
    expected = hmac.new(api_token.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, v1)


def test_a_registration_webhook_carries_a_signature_over_its_time_and_body(stack):
    node, emulator, fcm_app, bearer = stack
    received = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((dict((k.lower(), v) for k, v in self.headers.items()), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        stamp = str(time.time_ns())
        status, app = call(node.url + "/v1/mobile-apps", "POST", {"name": "hooks-" + stamp, "fcm_application": fcm_app},
                           bearer)
        assert status == 201, app
        status, token = call(node.url + f"/v1/mobile-apps/{app['id']}/tokens", "POST", {}, bearer)
        assert status == 201, token
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        status, _ = call(node.url + "/api/v1.0/orgs/123456789012/pushdeviceregistration/devices", "POST",
                         {"MobileAppId": app["id"], "UserId": "u-" + stamp, "ApiToken": token["token"],
                          "FcmDeviceToken": "fcm-hook-" + stamp}, {"x-ms-callback-url": url})
        assert status == 202
        wait_for(lambda: received or None, what="the webhook")
        headers, body = received[0]
        assert json.loads(body)["Status"] == "Success"
        signature = headers["x-clarion-signature"]
        assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", signature), signature
        assert abs(time.time() - int(signature.split(",")[0][2:])) < 120
        assert verify(signature, body, token["token"])
        assert not verify(signature, body.replace(b"Success", b"Failed"), token["token"]), "another body fails"
        assert not verify(signature, body, "cmt_someone-else"), "another key fails"
        old = re.sub(r"t=\d+", "t=" + str(int(time.time()) - 301), signature)
        assert not verify(old, body, token["token"]), "an old time fails"
    finally:
        server.shutdown()
