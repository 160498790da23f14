"""Topic permissions across accounts (issue 16, "Permissions"), with boto3 and two accounts' access keys:
AddPermission, RemovePermission and the Policy attribute; cross-account Publish, Subscribe and GetTopicAttributes are
AuthorizationError (HTTP 403, SNS API reference error list) unless the topic's policy allows them."""
import json
import subprocess

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from conftest import CLARION, Node, fresh_database, used_secret

MASTER_KEY = "dG9waWMtcGVybWlzc2lvbnMtZTJlLW1hc3Rlci1rZXk="
OWNER_KEY, OWNER_SECRET = "AKIACLARIONE2EOWNER1", "e2e-topic-owner-secret-0123456789abcdefgh"
OWNER, OTHER, THIRD = "111111111111", "222222222222", "333333333333"


def client(url, key, secret):
    return boto3.client("sns", endpoint_url=url, region_name="us-east-1", aws_access_key_id=key,
                        aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))


def access_key(database, account):
    """A key pair for `account` made by the CLI (the account is created with it)."""
    result = subprocess.run([CLARION, "accounts", "create-access-key", "--database-url", database, "--account-id", account],
                            capture_output=True, text=True, timeout=60, env={"CLARION_MASTER_KEY": MASTER_KEY, "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    key = result.stdout.split("AccessKeyId: ")[1].split()[0]
    secret = result.stdout.split("SecretAccessKey: ")[1].split()[0]
    used_secret(secret)
    return key, secret


@pytest.fixture(scope="module")
def accounts():
    database = fresh_database()
    node = Node(["--database-url", database, "--account-id", OWNER],
                env={"CLARION_ACCESS_KEY_ID": OWNER_KEY, "CLARION_SECRET_ACCESS_KEY": OWNER_SECRET, "CLARION_MASTER_KEY": MASTER_KEY})
    node.wait_ready()
    other = client(node.url, *access_key(database, OTHER))
    third = client(node.url, *access_key(database, THIRD))
    yield node, client(node.url, OWNER_KEY, OWNER_SECRET), other, third
    assert node.stop() == 0


def refused(call, code="AuthorizationError", status=403):
    with pytest.raises(botocore.exceptions.ClientError) as error:
        call()
    assert error.value.response["Error"]["Code"] == code, error.value.response
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    return error.value.response["Error"]["Message"]


def test_the_default_policy_refuses_other_accounts(accounts):
    node, owner, other, _ = accounts
    topic = owner.create_topic(Name="private")["TopicArn"]
    assert topic == f"arn:aws:sns:us-east-1:{OWNER}:private"
    message = refused(lambda: other.publish(TopicArn=topic, Message="hi"))
    assert message == f"User: arn:aws:iam::{OTHER}:root is not authorized to perform: SNS:Publish on resource: {topic}"
    refused(lambda: other.get_topic_attributes(TopicArn=topic))
    refused(lambda: other.subscribe(TopicArn=topic, Protocol="https", Endpoint="https://receiver.example/sns"))
    # A topic that does not exist answers the same: another account learns nothing of what exists.
    refused(lambda: other.publish(TopicArn=f"arn:aws:sns:us-east-1:{OWNER}:no-such-topic", Message="hi"))
    refused(lambda: other.publish(TopicArn="arn:aws:sns:us-east-1:999999999999:nobody", Message="hi"))
    # The owner's own calls are untouched, and the default policy is shown as SNS shows it.
    attributes = owner.get_topic_attributes(TopicArn=topic)["Attributes"]
    assert attributes["Owner"] == OWNER
    policy = json.loads(attributes["Policy"])
    assert policy["Statement"][0]["Condition"] == {"StringEquals": {"AWS:SourceOwner": OWNER}}
    owner.publish(TopicArn=topic, Message="mine")


def test_add_permission_allows_exactly_the_named_accounts_and_actions_until_removed(accounts):
    node, owner, other, third = accounts
    topic = owner.create_topic(Name="shared")["TopicArn"]
    owner.add_permission(TopicArn=topic, Label="other-publishes", AWSAccountId=[OTHER], ActionName=["Publish", "GetTopicAttributes"])
    statement = [s for s in json.loads(owner.get_topic_attributes(TopicArn=topic)["Attributes"]["Policy"])["Statement"]
                 if s["Sid"] == "other-publishes"][0]
    assert statement["Principal"] == {"AWS": f"arn:aws:iam::{OTHER}:root"}
    assert statement["Action"] == ["SNS:Publish", "SNS:GetTopicAttributes"] and statement["Resource"] == topic

    assert other.publish(TopicArn=topic, Message="from another account")["MessageId"]
    assert other.publish(TargetArn=topic, Message="TargetArn too")["MessageId"]
    shown = other.get_topic_attributes(TopicArn=topic)["Attributes"]
    assert shown["TopicArn"] == topic and shown["Owner"] == OWNER
    refused(lambda: other.subscribe(TopicArn=topic, Protocol="https", Endpoint="https://receiver.example/sns"))
    refused(lambda: third.publish(TopicArn=topic, Message="not named"))
    # Only actions the policy may grant: another account still cannot change the policy or delete the topic.
    refused(lambda: other.add_permission(TopicArn=topic, Label="me-too", AWSAccountId=[THIRD], ActionName=["Publish"]))
    refused(lambda: other.set_topic_attributes(TopicArn=topic, AttributeName="DisplayName", AttributeValue="x"))

    owner.add_permission(TopicArn=topic, Label="other-subscribes", AWSAccountId=[OTHER, THIRD], ActionName=["Subscribe"])
    subscription = other.subscribe(TopicArn=topic, Protocol="https", Endpoint="https://receiver.example/sns",
                                   ReturnSubscriptionArn=True)["SubscriptionArn"]
    assert subscription.startswith(f"arn:aws:sns:us-east-1:{OWNER}:shared:"), "the subscription is the topic's"

    owner.remove_permission(TopicArn=topic, Label="other-publishes")
    refused(lambda: other.publish(TopicArn=topic, Message="no longer"))
    refused(lambda: other.get_topic_attributes(TopicArn=topic))


def test_a_cross_account_subscription_is_the_topics_and_its_endpoint_owner_manages_it(accounts):
    node, owner, other, third = accounts
    topic = owner.create_topic(Name="fan-in")["TopicArn"]
    owner.add_permission(TopicArn=topic, Label="other-subscribes", AWSAccountId=[OTHER], ActionName=["Subscribe"])
    app = other.create_platform_application(Name="other-android", Platform="GCM", Attributes={
        "PlatformCredential": json.dumps({"type": "service_account", "project_id": "p", "private_key": "x",
                                          "client_email": "a@p.iam.gserviceaccount.com"})})["PlatformApplicationArn"]
    endpoint = other.create_platform_endpoint(PlatformApplicationArn=app, Token="other-device-" + "z" * 40)["EndpointArn"]
    assert f":{OTHER}:endpoint/" in endpoint
    subscription = other.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)["SubscriptionArn"]
    assert subscription.startswith(f"arn:aws:sns:us-east-1:{OWNER}:fan-in:")
    # SNS: the subscription's Owner is the subscriber; its endpoint ARN stays in the subscriber's account.
    listed = owner.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert listed == [{"SubscriptionArn": subscription, "Owner": OTHER, "Protocol": "application", "Endpoint": endpoint,
                       "TopicArn": topic}]
    attributes = other.get_subscription_attributes(SubscriptionArn=subscription)["Attributes"]
    assert attributes["Owner"] == OTHER and attributes["TopicArn"] == topic and attributes["Endpoint"] == endpoint
    other.set_subscription_attributes(SubscriptionArn=subscription, AttributeName="RawMessageDelivery", AttributeValue="false")
    refused(lambda: third.get_subscription_attributes(SubscriptionArn=subscription))
    refused(lambda: third.unsubscribe(SubscriptionArn=subscription))
    assert len(owner.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == 1
    other.unsubscribe(SubscriptionArn=subscription)
    assert owner.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []


def test_concurrent_add_permissions_all_land(accounts):
    """"Nothing accepted is lost": AddPermission reads and writes the policy under the topic's row lock."""
    from concurrent.futures import ThreadPoolExecutor
    node, owner, _, _ = accounts
    topic = owner.create_topic(Name="busy")["TopicArn"]
    labels = [f"grant-{i}" for i in range(12)]

    def add(label):
        client(node.url, OWNER_KEY, OWNER_SECRET).add_permission(
            TopicArn=topic, Label=label, AWSAccountId=[OTHER], ActionName=["Publish"])
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(add, labels))
    sids = {s["Sid"] for s in json.loads(owner.get_topic_attributes(TopicArn=topic)["Attributes"]["Policy"])["Statement"]}
    assert set(labels) <= sids, sorted(set(labels) - sids)


def test_add_and_remove_permission_parameters_follow_the_api_reference(accounts):
    node, owner, other, _ = accounts
    topic = owner.create_topic(Name="checked")["TopicArn"]
    owner.add_permission(TopicArn=topic, Label="once", AWSAccountId=[OTHER], ActionName=["Publish"])
    # Label is "a unique identifier for the new policy statement".
    assert "Statement already exists" in refused(
        lambda: owner.add_permission(TopicArn=topic, Label="once", AWSAccountId=[OTHER], ActionName=["Subscribe"]),
        "InvalidParameter", 400)
    # ActionName: "any Amazon SNS action name" that applies to a topic.
    assert "CreateTopic is not a topic action" in refused(
        lambda: owner.add_permission(TopicArn=topic, Label="bad-action", AWSAccountId=[OTHER], ActionName=["CreateTopic"]),
        "InvalidParameter", 400)
    assert "not a 12-digit account id" in refused(
        lambda: owner.add_permission(TopicArn=topic, Label="bad-account", AWSAccountId=["bob"], ActionName=["Publish"]),
        "InvalidParameter", 400)
    assert "no statement with the label never-added" in refused(
        lambda: owner.remove_permission(TopicArn=topic, Label="never-added"), "InvalidParameter", 400)
    refused(lambda: owner.add_permission(TopicArn=f"arn:aws:sns:us-east-1:{OWNER}:missing", Label="x",
                                         AWSAccountId=[OTHER], ActionName=["Publish"]), "NotFound", 404)


def test_the_policy_attribute_is_evaluated_and_what_is_not_supported_is_refused(accounts):
    node, owner, other, third = accounts
    topic = owner.create_topic(Name="by-policy")["TopicArn"]
    policy = {"Version": "2012-10-17", "Statement": [
        {"Sid": "everyone-publishes", "Effect": "Allow", "Principal": "*", "Action": "SNS:Publish", "Resource": topic},
        {"Sid": "but-not-third", "Effect": "Deny", "Principal": {"AWS": THIRD}, "Action": "sns:*", "Resource": topic},
    ]}
    owner.set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps(policy))
    other.publish(TopicArn=topic, Message="allowed by Principal *")
    refused(lambda: third.publish(TopicArn=topic, Message="an explicit Deny wins"))
    refused(lambda: other.get_topic_attributes(TopicArn=topic))

    unsupported = dict(policy, Statement=[{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "SNS:Publish",
                                           "Resource": topic, "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::b"}}}])
    assert "unsupported condition operator ArnLike" in refused(
        lambda: owner.set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps(unsupported)),
        "InvalidParameter", 400)
    assert "Resource must be this topic's ARN" in refused(
        lambda: owner.create_topic(Name="elsewhere", Attributes={"Policy": json.dumps(policy)}), "InvalidParameter", 400)
    # The refused policy was not stored: the earlier one still holds.
    other.publish(TopicArn=topic, Message="still allowed")
