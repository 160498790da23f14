"""Issue 16, subscription filter policies, end to end: boto3 against the release node, deliveries checked at a
standalone emulator's records. Before, FilterPolicy was stored and shown but every subscriber got every message.
Now a subscriber whose policy does not match gets nothing, and the message status counts it `filtered`, not
failed. The rules themselves are checked row by row in Tests/ClarionCoreTests/FilterPolicyTests.swift."""
import json
import os
import subprocess
import tempfile

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import CLARION, Emulator, Node, fresh_database, wait_for

KEY = "AKIACLARIONE2EFILTER"
SECRET = "e2e-filter-secret-0123456789abcdefghijkl"
MASTER_KEY = "ZmlsdGVyLXBvbGljaWVzLWUyZS1tYXN0ZXIta2V5MDA="


def h2(url, method="GET"):
    """The emulator speaks HTTP/2 only (h2c); curl talks to it with prior knowledge."""
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-X", method, url], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def stack():
    with Emulator("filter") as emulator:
        database = fresh_database()
        data = tempfile.mkdtemp(prefix="clarion-e2e-filter-node-")
        env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY}
        node = Node(["--database-url", database, "--data-dir", data], env=env)
        node.wait_ready()
        sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
        key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database], capture_output=True,
                             text=True, timeout=60, env={**os.environ, **env})
        assert key.returncode == 0, key.stderr
        bearer = "Bearer " + key.stdout.split("key: ")[1].strip()
        app = sns.create_platform_application(Name="filter-android", Platform="GCM", Attributes={
            "PlatformCredential": open(os.path.join(emulator.demo, "fcm-service-account.json")).read(),
            "ProviderEndpoint": emulator.url})["PlatformApplicationArn"]
        yield node, sns, emulator, app, bearer
        assert node.stop() == 0


def tokens_delivered(emulator):
    records = [json.loads(line) for line in h2(emulator.url + "/_emulator/records").splitlines() if line.strip()]
    return sorted(r["token"] for r in records if r.get("status") == 200 and r.get("token"))


def message_status(node, bearer, message):
    import urllib.request
    request = urllib.request.Request(node.url + f"/v1/messages/{message}", headers={"Authorization": bearer})
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())


def test_only_subscribers_whose_policy_matches_get_the_message_and_the_rest_count_filtered(stack):
    node, sns, emulator, app, bearer = stack
    topic = sns.create_topic(Name="filtered-news")["TopicArn"]
    # One subscriber per rule (string-value-matching, numeric-value-matching, attribute-key-matching,
    # and-or-logic), and one without a policy; (token, policy, gets the message).
    subscribers = [
        ("fcm-exact", {"sport": ["rugby", "tennis"]}, True),
        ("fcm-exact-miss", {"sport": ["baseball"]}, False),
        ("fcm-prefix", {"store": [{"prefix": "example_"}]}, True),
        ("fcm-anything-but", {"sport": [{"anything-but": ["rugby"]}]}, False),
        ("fcm-numeric", {"price_usd": [{"numeric": [">", 100, "<=", 250]}]}, True),
        ("fcm-numeric-miss", {"price_usd": [{"numeric": ["<", 0]}]}, False),
        ("fcm-array", {"interests": ["hockey"]}, True),
        ("fcm-exists-false", {"coupon": [{"exists": False}]}, True),
        ("fcm-exists-miss", {"coupon": [{"exists": True}]}, False),
        ("fcm-or", {"$or": [{"sport": ["golf"]}, {"store": ["example_corp"]}]}, True),
        ("fcm-and-miss", {"sport": ["rugby"], "store": ["other_corp"]}, False),
        ("fcm-no-policy", None, True),
    ]
    for token, policy, _ in subscribers:
        endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
        attributes = {"FilterPolicy": json.dumps(policy)} if policy is not None else {}
        sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint, Attributes=attributes)
    h2(emulator.url + "/_emulator/reset", "POST")
    message = sns.publish(TopicArn=topic, Message="match day", MessageAttributes={
        "sport": {"DataType": "String", "StringValue": "rugby"},
        "store": {"DataType": "String", "StringValue": "example_corp"},
        "price_usd": {"DataType": "Number", "StringValue": "210.75"},
        "interests": {"DataType": "String.Array", "StringValue": json.dumps(["soccer", "hockey"])},
    })["MessageId"]

    status = wait_for(lambda: (lambda s: s if s["state"] == "Completed" else None)(message_status(node, bearer, message)),
                      timeout=30, what="the message to complete")
    expected = sorted(token for token, _, gets in subscribers if gets)
    assert tokens_delivered(emulator) == expected
    d = status["deliveries"]
    assert d["filtered"] == len(subscribers) - len(expected), status
    assert d["accepted"] == len(expected) and d["failed"] == 0 and d["skipped"] == 0, status
    assert d["targeted"] == len(subscribers), status


def test_message_body_scope_filters_on_nested_keys_of_the_json_body(stack):
    node, sns, emulator, app, bearer = stack
    topic = sns.create_topic(Name="filtered-orders")["TopicArn"]
    policy = json.dumps({"order": {"total": [{"numeric": [">=", 100]}], "currency": ["EUR"]}})
    subscriptions = {}
    for token in ("fcm-body-a", "fcm-body-b"):
        endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
        subscriptions[token] = sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint, Attributes={
            "FilterPolicyScope": "MessageBody", "FilterPolicy": policy}, ReturnSubscriptionArn=True)["SubscriptionArn"]
    # Switching a nested policy to the attribute scope is refused, in SNS's words.
    with pytest.raises(ClientError) as refused:
        sns.set_subscription_attributes(SubscriptionArn=subscriptions["fcm-body-b"], AttributeName="FilterPolicyScope",
                                        AttributeValue="MessageAttributes")
    assert refused.value.response["Error"]["Code"] == "InvalidParameter"
    assert refused.value.response["Error"]["Message"] == \
        "Invalid parameter: Filter policy scope MessageAttributes does not support nested filter policy"
    sns.set_subscription_attributes(SubscriptionArn=subscriptions["fcm-body-b"], AttributeName="FilterPolicy",
                                    AttributeValue=json.dumps({"order": {"currency": ["USD"]}}))
    h2(emulator.url + "/_emulator/reset", "POST")
    message = sns.publish(TopicArn=topic, Message=json.dumps({"order": {"total": 120, "currency": "EUR"}}))["MessageId"]
    status = wait_for(lambda: (lambda s: s if s["state"] == "Completed" else None)(message_status(node, bearer, message)),
                      timeout=30, what="the message to complete")
    assert tokens_delivered(emulator) == ["fcm-body-a"]
    assert status["deliveries"]["filtered"] == 1 and status["deliveries"]["accepted"] == 1, status


@pytest.mark.parametrize("policy, message", [
    ({"a": ["1"], "b": ["1"], "c": ["1"], "d": ["1"], "e": ["1"], "f": ["1"]},
     "Filter policy can not have more than 5 keys"),
    ({"a": [str(n) for n in range(151)]}, "Filter policy is too complex"),
    ({"a": [{"wildcard": "x*"}]}, "Unrecognized match type wildcard"),
])
def test_subscribe_refuses_a_policy_over_snss_limits_naming_the_rule(stack, policy, message):
    node, sns, emulator, app, bearer = stack
    topic = sns.create_topic(Name="filtered-limits")["TopicArn"]
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="fcm-limits")["EndpointArn"]
    with pytest.raises(ClientError) as refused:
        sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint,
                      Attributes={"FilterPolicy": json.dumps(policy)})
    error = refused.value.response["Error"]
    assert error["Code"] == "InvalidParameter"
    assert error["Message"] == "Invalid parameter: Attributes Reason: FilterPolicy: " + message
