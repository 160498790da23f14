"""Issue 16, endpoint lifecycle and delivery-failure events, end to end: a platform application's
EventEndpointCreated, EventEndpointUpdated, EventEndpointDeleted and EventDeliveryFailure name a topic; an HTTP
subscription of that topic (a real HTTP server in the test, verifying each signature) receives each event as SNS
publishes it, through the same durable topic path as any publish.

Rules checked (docs/providers.md C.12; source: the Amazon SNS Developer Guide, "Mobile app events",
https://docs.aws.amazon.com/sns/latest/dg/application-event-notifications.html):
- EventEndpointCreated: a new platform endpoint is added to the application.
- EventEndpointUpdated: any attribute of an endpoint changes, including Enabled turned false by provider feedback
  (the emulator answers FCM UNREGISTERED for an `unregistered-` token); Clarion adds DisabledReason.
- EventEndpointDeleted: an endpoint is deleted.
- EventDeliveryFailure: a delivery fails for good (FailureType, FailureMessage, DeliveryAttempts, MessageId).
- The attributes must name an existing topic of the account (InvalidParameter otherwise), and are shown by
  GetPlatformApplicationAttributes and the native API.
"""
import json
import os
import subprocess
import tempfile
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import CLARION, Emulator, Node, call, fresh_database, wait_for
from test_http_subscriptions import Receiver, subscribe_and_confirm, verify

KEY = "AKIACLARIONE2EEVENTS1"
SECRET = "e2e-endpoint-events-secret-0123456789ab"
MASTER_KEY = "ZW5kcG9pbnQtZXZlbnRzLWUyZS1tYXN0ZXIta2V5MDA="
EVENTS = ["EventEndpointCreated", "EventEndpointUpdated", "EventEndpointDeleted", "EventDeliveryFailure"]


@pytest.fixture(scope="module")
def stack():
    with Emulator("events") as emulator:
        database = fresh_database()
        data = tempfile.mkdtemp(prefix="clarion-e2e-events-node-")
        env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY,
               "CLARION_SUBSCRIPTION_ALLOW_HOSTS": "127.0.0.1/32"}
        node = Node(["--database-url", database, "--data-dir", data], env=env)
        node.wait_ready()
        sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
        key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database], capture_output=True,
                             text=True, timeout=60, env={**os.environ, **env})
        assert key.returncode == 0, key.stderr
        bearer = "Bearer " + key.stdout.split("key: ")[1].strip()
        receiver = Receiver()
        yield node, sns, emulator, receiver, bearer
        receiver.close()
        assert node.stop() == 0


def events(receiver, path):
    """The event documents received so far, each verified, in arrival order."""
    out = []
    for _, body, _ in receiver.posts(path, "Notification"):
        out.append(json.loads(json.loads(body)["Message"]))
    return out


def wait_event(receiver, path, predicate, what):
    return wait_for(lambda: next((e for e in events(receiver, path) if predicate(e)), None), what=what)


def test_each_endpoint_event_reaches_an_http_subscriber_of_the_event_topic(stack):
    node, sns, emulator, receiver, bearer = stack
    topic = sns.create_topic(Name="app-events")["TopicArn"]
    path = "/events"
    subscribe_and_confirm(sns, receiver, topic, path)

    credential = open(os.path.join(emulator.demo, "fcm-service-account.json")).read()
    # The event topics must exist (SNS: InvalidParameter).
    with pytest.raises(ClientError) as refused:
        sns.create_platform_application(Name="events-bad", Platform="GCM", Attributes={
            "PlatformCredential": credential, "ProviderEndpoint": emulator.url,
            "EventEndpointCreated": topic.replace("app-events", "no-such-topic")})
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"
    assert "EventEndpointCreated" in refused.value.response["Error"]["Message"]

    app = sns.create_platform_application(Name="events-android", Platform="GCM", Attributes={
        "PlatformCredential": credential, "ProviderEndpoint": emulator.url,
        **{name: topic for name in EVENTS}})["PlatformApplicationArn"]
    shown = sns.get_platform_application_attributes(PlatformApplicationArn=app)["Attributes"]
    assert all(shown[name] == topic for name in EVENTS), shown

    # Created.
    live = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="fcm-events-live-0001")["EndpointArn"]
    created = wait_event(receiver, path, lambda e: e["EventType"] == "EndpointCreated" and e["EndpointArn"] == live,
                         "EndpointCreated")
    assert created["Resource"] == app and created["Service"] == "SNS"
    assert created["Attributes"]["Token"] == "fcm-events-live-0001" and created["Attributes"]["Enabled"] == "true"
    # Every event arrives as a signed Notification of the event topic.
    for _, body, _ in receiver.posts(path, "Notification"):
        note = json.loads(body)
        assert note["TopicArn"] == topic
        verify(note, node.url)

    # Updated through SetEndpointAttributes.
    sns.set_endpoint_attributes(EndpointArn=live, Attributes={"CustomUserData": "vip"})
    updated = wait_event(receiver, path, lambda e: e["EventType"] == "EndpointUpdated" and e["EndpointArn"] == live,
                         "EndpointUpdated")
    assert updated["Attributes"]["CustomUserData"] == "vip" and "DisabledReason" not in updated

    # The emulator answers UNREGISTERED for this token: the delivery fails for good (DeliveryFailure) and provider
    # feedback disables the endpoint (EndpointUpdated, Enabled false, with the reason).
    dead = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="unregistered-events-0001")["EndpointArn"]
    published = sns.publish(TargetArn=dead, Message="to a dead token")
    failure = wait_event(receiver, path, lambda e: e["EventType"] == "DeliveryFailure" and e["EndpointArn"] == dead,
                         "DeliveryFailure")
    assert failure["MessageId"] == published["MessageId"]
    assert failure["FailureType"] == "InvalidPlatformToken" and failure["DeliveryAttempts"] == 1
    assert failure["FailureMessage"] and failure["Resource"] == app
    disabled = wait_event(receiver, path, lambda e: e["EventType"] == "EndpointUpdated" and e["EndpointArn"] == dead,
                          "EndpointUpdated (disabled)")
    assert disabled["Attributes"]["Enabled"] == "false" and disabled["DisabledReason"], disabled
    assert sns.get_endpoint_attributes(EndpointArn=dead)["Attributes"]["Enabled"] == "false"

    # Deleted.
    sns.delete_endpoint(EndpointArn=live)
    deleted = wait_event(receiver, path, lambda e: e["EventType"] == "EndpointDeleted" and e["EndpointArn"] == live,
                         "EndpointDeleted")
    assert deleted["Resource"] == app

    # Turning an event off (empty value) stops it.
    sns.set_platform_application_attributes(PlatformApplicationArn=app, Attributes={"EventEndpointCreated": ""})
    quiet = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="fcm-events-quiet-0001")["EndpointArn"]
    sns.delete_endpoint(EndpointArn=quiet)
    wait_event(receiver, path, lambda e: e["EventType"] == "EndpointDeleted" and e["EndpointArn"] == quiet,
               "EndpointDeleted of the quiet endpoint")
    assert not [e for e in events(receiver, path) if e["EventType"] == "EndpointCreated" and e["EndpointArn"] == quiet]


def test_the_native_api_sets_and_checks_event_topics(stack):
    node, sns, emulator, _, bearer = stack
    topic = sns.create_topic(Name="native-events")["TopicArn"]
    credential = open(os.path.join(emulator.demo, "fcm-service-account.json")).read()
    status, body = call(node.url + "/v1/applications", "POST", {
        "name": "native-events", "platform": "GCM", "credential": credential,
        "attributes": {"ProviderEndpoint": emulator.url, "EventEndpointDeleted": topic}}, {"Authorization": bearer})
    assert status == 201, body
    assert body["attributes"]["EventEndpointDeleted"] == topic, body
    status, body = call(node.url + f"/v1/applications/{body['id']}", "PATCH", {
        "attributes": {"EventEndpointUpdated": topic.replace("native-events", "missing")}}, {"Authorization": bearer})
    assert status == 400, body
    assert json.dumps(body).find("attributes.EventEndpointUpdated") >= 0, body
