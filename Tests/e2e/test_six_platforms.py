"""One topic, six platforms, end to end through the binary we ship: boto3 makes APNS, APNS_SANDBOX, GCM, ADM, WEBPUSH
and HMS applications against one emulator over TLS (a CA the test makes, trusted with CLARION_PROVIDER_CA_FILE),
subscribes endpoints of every platform to one topic, publishes once, and checks at the emulator's records that every
device got exactly one push of its platform's shape.

Rules checked, and where they come from (docs/providers.md):
- A.2/A.3: APNs takes the APNS / APNS_SANDBOX entry as the body, `apns-push-type` alert.
- B.2/C.3: FCM v1 `{"message":{...,"token":...}}` from the GCM entry's fcmV1Message.
- D.2: ADM `{"data":{"message":<default>}}` when the map has no ADM entry.
- W.5/RFC 8291: Web Push delivers the WEBPUSH entry as the decrypted payload (the emulator decrypts; test_webpush.py
  decrypts independently).
- E.1 (Huawei Push Kit v1): the HMS entry becomes `message` with `token` a list, `android.notification.click_action`
  set, posted to /v1/<app id>/messages:send with an OAuth client-credentials token; HMS endpoints of one
  application share requests (up to 1000 tokens each), and every token is recorded once.
- E.1a: an HMS token Push Kit calls invalid (80300007 / 80100000 illegal_tokens) disables its endpoint with the reason.
"""
import json
import os
import tempfile

import pytest

from conftest import Emulator, curl_with_ca, sns_node_trusting, wait_for
from test_tls_own_ca import make_ca_and_server_certificate

KEY = "AKIACLARIONE2ESIXPLT"
SECRET = "e2e-six-platforms-secret-0123456789abcd"


@pytest.fixture(scope="module")
def emulator():
    work = tempfile.mkdtemp(prefix="clarion-e2e-six-")
    ca = make_ca_and_server_certificate(work)
    tls = {"enabled": True, "certificatePath": os.path.join(work, "server.pem"),
           "privateKeyPath": os.path.join(work, "server.key")}
    with Emulator("six", config={"tls": tls}, tls=True, work=work) as e:
        yield {"url": e.url, "ca": ca, "demo": e.demo}


@pytest.fixture(scope="module")
def node(emulator):
    yield from sns_node_trusting(emulator["ca"], KEY, SECRET, "clarion-e2e-six-node-")


def curl(emulator, method, path):
    return curl_with_ca(emulator, method, path)


def records(emulator):
    return [json.loads(line) for line in curl(emulator, "GET", "/_emulator/records").splitlines() if line.strip()]


def applications(sns, emulator):
    demo, url = emulator["demo"], emulator["url"]
    apns = json.load(open(os.path.join(demo, "apns.json")))
    p8 = open(os.path.join(demo, apns["keyFile"])).read()
    adm = json.load(open(os.path.join(demo, "adm-client.json")))
    hms = json.load(open(os.path.join(demo, "hms-client.json")))
    fcm_json = open(os.path.join(demo, "fcm-service-account.json")).read()
    apple = {"PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
             "ApplePlatformBundleID": apns["bundleID"], "ProviderEndpoint": url}
    create = sns.create_platform_application
    return {
        "APNS": create(Name="ios", Platform="APNS", Attributes=apple)["PlatformApplicationArn"],
        "APNS_SANDBOX": create(Name="ios-dev", Platform="APNS_SANDBOX", Attributes=apple)["PlatformApplicationArn"],
        "GCM": create(Name="android", Platform="GCM", Attributes={
            "PlatformCredential": fcm_json, "ProviderEndpoint": url, "ProviderAuthEndpoint": url + "/token"})["PlatformApplicationArn"],
        "ADM": create(Name="kindle", Platform="ADM", Attributes={
            "PlatformPrincipal": adm["clientID"], "PlatformCredential": adm["clientSecret"],
            "ProviderEndpoint": url, "ProviderAuthEndpoint": url + "/auth/o2/token"})["PlatformApplicationArn"],
        "WEBPUSH": create(Name="site", Platform="WEBPUSH",
                          Attributes={"VAPIDSubject": "mailto:ops@example.com"})["PlatformApplicationArn"],
        "HMS": create(Name="huawei", Platform="HMS", Attributes={
            "PlatformPrincipal": hms["clientID"], "PlatformCredential": hms["clientSecret"],
            "ProviderEndpoint": url, "ProviderAuthEndpoint": url + "/oauth2/v3/token"})["PlatformApplicationArn"],
    }


def test_one_topic_publish_reaches_every_device_of_six_platforms_exactly_once(emulator, node):
    sns = node.sns
    apps = applications(sns, emulator)
    # The HMS secret is write-only, like every credential.
    shown = sns.get_platform_application_attributes(PlatformApplicationArn=apps["HMS"])["Attributes"]
    assert "PlatformCredential" not in shown and "PlatformPrincipal" not in shown
    subscriptions = [json.loads(curl(emulator, "POST", "/_emulator/webpush/subscriptions")) for _ in range(3)]
    tokens = {
        "APNS": ["%064x" % (0xA100 + i) for i in range(3)],
        "APNS_SANDBOX": ["%064x" % (0xB200 + i) for i in range(3)],
        "GCM": [f"fcm-six-{i:04d}-" + "x" * 40 for i in range(3)],
        "ADM": [f"amzn1.adm-registration.v3.six{i:04d}" for i in range(3)],
        "WEBPUSH": [json.dumps({"endpoint": s["endpoint"], "keys": s["keys"]}) for s in subscriptions],
        "HMS": [f"IQAAAACy0kYdAABsix{i:04d}" + "h" * 60 for i in range(3)],
    }
    topic = sns.create_topic(Name="everyone")["TopicArn"]
    for platform, arn in apps.items():
        for token in tokens[platform]:
            endpoint = sns.create_platform_endpoint(PlatformApplicationArn=arn, Token=token)["EndpointArn"]
            sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)
    curl(emulator, "POST", "/_emulator/reset")

    sns.publish(TopicArn=topic, MessageStructure="json", Message=json.dumps({
        "default": "hello everyone",
        "APNS": json.dumps({"aps": {"alert": "hello iOS"}}),
        "APNS_SANDBOX": json.dumps({"aps": {"alert": "hello iOS sandbox"}}),
        "GCM": json.dumps({"fcmV1Message": {"message": {"notification": {"title": "t", "body": "hello Android"}}}}),
        "WEBPUSH": json.dumps({"title": "hello browser"}),
        "HMS": json.dumps({"notification": {"title": "t", "body": "hello Huawei"}, "data": "{\"k\":\"v\"}",
                           "android": {"collapse_key": -1}}),
    }), MessageAttributes={"AWS.SNS.MOBILE.HMS.TTL": {"DataType": "Number", "StringValue": "3600"}})

    web_ids = {s["endpoint"].rsplit("/", 1)[1] for s in subscriptions}
    hms_tokens = set(tokens["HMS"])

    def by_device():
        sends = [r for r in records(emulator) if r["endpoint"] in ("apns", "fcm", "adm", "webpush", "hms") and r.get("token")]
        return sends if len(sends) >= 18 else None

    wait_for(by_device, timeout=90, what="18 deliveries at the emulator")
    import time
    time.sleep(1.0)  # anything late would be a duplicate
    sends = [r for r in records(emulator) if r["endpoint"] in ("apns", "fcm", "adm", "webpush", "hms") and r.get("token")]
    assert all(200 <= r["status"] < 300 for r in sends), [r for r in sends if r["status"] >= 300]
    seen = sorted(r["token"] for r in sends)
    expected = sorted(tokens["APNS"] + tokens["APNS_SANDBOX"] + tokens["GCM"] + tokens["ADM"] + list(web_ids) + tokens["HMS"])
    assert seen == expected, "every device exactly once"

    for r in sends:
        token = r["token"]
        if r["endpoint"] == "apns":
            alert = json.loads(r["payload"])["aps"]["alert"]
            assert alert == ("hello iOS" if token in tokens["APNS"] else "hello iOS sandbox")
            assert r["headers"]["apns-push-type"] == "alert"
        elif r["endpoint"] == "fcm":
            message = json.loads(r["payload"])["message"]
            assert message["token"] == token and message["notification"]["body"] == "hello Android"
        elif r["endpoint"] == "adm":
            assert json.loads(r["payload"]) == {"data": {"message": "hello everyone"}}
        elif r["endpoint"] == "webpush":
            assert token in web_ids and json.loads(r["payload"]) == {"title": "hello browser"}
        else:
            hms = json.load(open(os.path.join(emulator["demo"], "hms-client.json")))
            assert r["path"] == f"/v1/{hms['clientID']}/messages:send"
            assert r["headers"]["authorization"] == "<redacted>"
            message = json.loads(r["payload"])["message"]
            assert token in message["token"] and set(message["token"]) <= hms_tokens
            assert message["notification"] == {"title": "t", "body": "hello Huawei"}
            assert message["data"] == "{\"k\":\"v\"}"
            assert message["android"]["notification"]["click_action"] == {"type": 3}
            assert message["android"]["collapse_key"] == -1
            assert message["android"]["ttl"] in ("3600s", "3599s")
    # HMS tokens of one application travel together (E.1: up to 1000 a request).
    hms_requests = {(r["time"], r["connection"]) for r in sends if r["endpoint"] == "hms"}
    assert len(hms_requests) < 3, hms_requests


def test_an_invalid_hms_token_disables_its_endpoint_with_the_reason(emulator, node):
    sns = node.sns
    app = sns.list_platform_applications()["PlatformApplications"]
    arn = next(a["PlatformApplicationArn"] for a in app if a["PlatformApplicationArn"].endswith("/HMS/huawei"))
    dead = sns.create_platform_endpoint(PlatformApplicationArn=arn, Token="invalid-IQAAAAdead" + "z" * 40)["EndpointArn"]
    sns.publish(TargetArn=dead, Message="are you there?")
    attributes = wait_for(lambda: (lambda a: a if a["Enabled"] == "false" else None)(
        sns.get_endpoint_attributes(EndpointArn=dead)["Attributes"]), timeout=60, what="the HMS endpoint disabled")
    assert "80300007" in attributes["DisabledReason"], attributes


def test_a_wrong_hms_client_secret_disables_the_application_with_the_reason(emulator, node):
    """E.1: the token exchange refuses the secret; the application is disabled, the reason readable, the secret not."""
    sns = node.sns
    hms = json.load(open(os.path.join(emulator["demo"], "hms-client.json")))
    url = emulator["url"]
    app = sns.create_platform_application(Name="huawei-wrong", Platform="HMS", Attributes={
        "PlatformPrincipal": hms["clientID"], "PlatformCredential": "not-the-secret-e2e",
        "ProviderEndpoint": url, "ProviderAuthEndpoint": url + "/oauth2/v3/token"})["PlatformApplicationArn"]
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="IQAAAAwrongsecret" + "w" * 40)["EndpointArn"]
    sns.publish(TargetArn=endpoint, Message="hello?")
    attributes = wait_for(lambda: (lambda a: a if a["Enabled"] == "false" else None)(
        sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]), timeout=60,
        what="the HMS application disabled")
    assert "token exchange refused" in attributes["DisabledReason"], attributes
    assert "not-the-secret-e2e" not in json.dumps(attributes)
    assert "not-the-secret-e2e" not in node.output()
