"""Issue 7 end to end against `clarion serve --with-emulator`: a mobile app and its API token over the native API,
a device registered through the registration API (202, tracked id, status Success), the endpoint visible to the SNS
API, and a push to it reaching the emulator."""
import json
import subprocess
import time
import urllib.request

from conftest import CLARION, call
from test_delivery import KEY, SECRET, applications, h2_get, stack, wait_for  # noqa: F401  (fixture re-used)



def test_a_device_registered_through_the_registration_api_becomes_a_reachable_endpoint(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--data-dir", node.data_dir],
                         capture_output=True, text=True, timeout=60)
    assert key.returncode == 0, key.stderr
    bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
    fcm_app = "GCM:" + apps["GCM"].rsplit("/", 1)[1]
    status, app = call(node.url + "/v1/mobile-apps", "POST", {"name": "shop-" + str(time.time_ns()),
                                                             "fcm_application": fcm_app}, bearer)
    assert status == 201, app
    app_id = app.get("id") or app.get("MobileAppId") or app.get("mobile_app_id")
    status, token = call(node.url + f"/v1/mobile-apps/{app_id}/tokens", "POST", {}, bearer)
    assert status == 201, token
    api_token = token["token"]

    base = node.url + "/api/v1.0/orgs/123456789012/pushdeviceregistration/devices"
    device = "fcm-registered-device-" + str(time.time_ns())
    status, tracked = call(base, "POST", {"MobileAppId": app_id, "UserId": "user-42", "ApiToken": api_token,
                                          "FcmDeviceToken": device}, {"x-ms-track-registration": "true"})
    assert status == 202, tracked
    request_id = tracked["RegistrationRequestId"]
    # A bad request names its field.
    status, error = call(base, "POST", {"MobileAppId": app_id, "ApiToken": api_token, "FcmDeviceToken": device})
    assert status == 400 and "UserId" in json.dumps(error)

    def succeeded():
        s, statuses = call(base + "/status/", "POST", {"RegistrationRequestIds": [request_id], "MobileAppId": app_id,
                                                        "ApiToken": api_token})
        assert s == 200, statuses
        return statuses if statuses[0]["Status"] == "Success" else None

    wait_for(succeeded, what="the registration to succeed")
    endpoints = sns.list_endpoints_by_platform_application(PlatformApplicationArn=apps["GCM"])["Endpoints"]
    mine = [e for e in endpoints if e["Attributes"]["Token"] == device]
    assert len(mine) == 1
    sns.publish(TargetArn=mine[0]["EndpointArn"], Message="welcome")

    def arrived():
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        return [r for r in records if r.get("token") == device and r.get("status") == 200]

    wait_for(arrived, what="the push to reach the emulator")


def test_clarion_apps_creates_a_mobile_app_and_a_token_the_registration_api_accepts(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    fcm_app = "GCM:" + apps["GCM"].rsplit("/", 1)[1]
    created = subprocess.run([CLARION, "apps", "create", "--name", "cli-" + str(time.time_ns()), "--fcm", fcm_app,
                              "--data-dir", node.data_dir], capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    app_id = created.stdout.split("MobileAppId: ")[1].split()[0]
    token = subprocess.run([CLARION, "apps", "create-token", app_id, "--data-dir", node.data_dir],
                           capture_output=True, text=True, timeout=60)
    assert token.returncode == 0, token.stderr
    api_token = token.stdout.split("ApiToken: ")[1].strip()
    assert api_token not in token.stderr, "the token never reaches the logs"
    base = node.url + "/api/v1.0/orgs/123456789012/pushdeviceregistration/devices"
    status, tracked = call(base, "POST", {"MobileAppId": app_id, "UserId": "cli-user", "ApiToken": api_token,
                                          "FcmDeviceToken": "fcm-cli-device-" + str(time.time_ns())},
                           {"x-ms-track-registration": "true"})
    assert status == 202

    def succeeded():
        s, statuses = call(base + "/status/", "POST", {"RegistrationRequestIds": [tracked["RegistrationRequestId"]],
                                                        "MobileAppId": app_id, "ApiToken": api_token})
        return statuses if s == 200 and statuses[0]["Status"] == "Success" else None

    wait_for(succeeded, what="the registration to succeed")
    bad = subprocess.run([CLARION, "apps", "create-token", "not-a-uuid", "--data-dir", node.data_dir],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 64


def test_publish_to_a_user_reaches_exactly_that_users_devices_at_the_emulator(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    fcm_app = "GCM:" + apps["GCM"].rsplit("/", 1)[1]
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--data-dir", node.data_dir],
                         capture_output=True, text=True, timeout=60)
    bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
    stamp = str(time.time_ns())
    devices = {"alice": [f"fcm-alice-{i}-{stamp}" for i in range(2)], "bob": [f"fcm-bob-0-{stamp}"]}
    for user, tokens in devices.items():
        for token in tokens:
            status, created = call(node.url + f"/v1/applications/{fcm_app}/endpoints", "POST",
                                   {"token": token, "user_id": user + stamp}, bearer)
            assert status in (200, 201), created
    status, accepted = call(node.url + "/v1/publish", "POST", {
        "targets": [{"user": {"app": fcm_app, "user_id": "alice" + stamp}}], "message": "for alice"}, bearer)
    assert status == 202, accepted

    def arrived():
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        got = sorted(r["token"] for r in records if stamp in (r.get("token") or "") and r.get("status") == 200)
        return got if len(got) >= 2 else None

    assert wait_for(arrived, what="alice's devices at the emulator") == sorted(devices["alice"])
    time.sleep(1.0)
    records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
    assert not [r for r in records if r.get("token") in devices["bob"]], "bob receives nothing"


def test_events_then_an_audience_publish_by_language_reach_exactly_the_matching_devices(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    fcm_app = "GCM:" + apps["GCM"].rsplit("/", 1)[1]
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--data-dir", node.data_dir],
                         capture_output=True, text=True, timeout=60)
    bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
    stamp = str(time.time_ns())
    project = "proj-" + stamp
    status, app = call(node.url + "/v1/mobile-apps", "POST", {"name": "events-" + stamp, "fcm_application": fcm_app,
                                                             "firebase_project_id": project}, bearer)
    assert status == 201, app
    app_id = app.get("id") or app.get("MobileAppId") or app.get("mobile_app_id")
    devices = {f"fcm-de-{i}-{stamp}": "de" for i in range(2)}
    devices.update({f"fcm-en-{i}-{stamp}": "en" for i in range(2)})
    for i, (token, language) in enumerate(devices.items()):
        event = {"user_id": f"u{i}-{stamp}", "event_type": "fcm_registration_token_registered",
                 "event_timestamp": "2026-11-30T12:00:00Z", "version": "1",
                 "app": {"id": "com.example.shop", "name": "Shop", "version": "2.1.0", "language": language},
                 "os": {"type": "android", "version": "14"},
                 "firebase": {"project_id": project, "registration_token": token}}
        status, answer = call(node.url + "/meiro_mobile", "POST", event)
        assert status == 200, answer
    missing = call(node.url + "/meiro_mobile", "POST", {"event_type": "fcm_registration_token_registered"})
    assert missing[0] == 400 and missing[1]["message"] == "validation: user_id is required property"

    status, accepted = call(node.url + "/v1/publish/audience", "POST",
                            {"app": app_id, "languages": ["de"], "message": "Hallo"}, bearer)
    assert status == 202, accepted

    def arrived():
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        got = sorted(r["token"] for r in records if stamp in (r.get("token") or "") and r.get("status") == 200)
        return got if len(got) >= 2 else None

    expected = sorted(t for t, language in devices.items() if language == "de")
    assert wait_for(arrived, what="the German devices at the emulator") == expected
    time.sleep(1.0)
    records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
    assert not [r for r in records if stamp in (r.get("token") or "") and "-en-" in r["token"]]
