"""SNS regions (issue 16, "Permissions, regions, statuses"), end to end with boto3 clients of two regions and the aws
CLI against one node:

- a request acts in the region of its SigV4 credential scope; with CLARION_REGIONS unset any AWS region name is served;
- resources are isolated per region: the same topic name in two regions is two topics, ARNs carry the region, lists
  show one region's, and a publish reaches only its own region's subscribers (checked at a standalone emulator);
- an ARN of another region is refused as SNS refuses it: InvalidParameter (400) "Invalid parameter: TopicArn" (SNS's
  answer for a topic of another region, as reported in mozilla/security#8, boto/boto3#1084 and
  aws/serverless-application-model#105; docs/providers.md C.2 "Same-region only");
- with CLARION_REGIONS set, a region not listed gets AWS's answer for a credential scope naming a region the endpoint
  does not serve: SignatureDoesNotMatch (403) "Credential should be scoped to a valid region, not '<region>'. "
  (the Query services' error, e.g. STS's in cognitect-labs/aws-api#27; the IAM user guide's SigV4 troubleshooting
  lists it among the credential scope errors)."""
import json
import os
import subprocess
import tempfile

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from conftest import CLARION, Emulator, Node, call, fresh_database, http_get, wait_for
from test_http_subscriptions import Receiver, verify

KEY = "AKIACLARIONE2EREGION"
SECRET = "e2e-regions-secret-0123456789abcdefghijk"
MASTER_KEY = "cmVnaW9ucy1lMmUtbWFzdGVyLWtleS0wMTIzNDU2Nzg="
ACCOUNT = "123456789012"


def client(url, region):
    return boto3.client("sns", endpoint_url=url, region_name=region, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                        config=Config(retries={"max_attempts": 1}))


def h2(url, method="GET"):
    """The emulator speaks HTTP/2 only (h2c); curl talks to it with prior knowledge."""
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", "-X", method, url], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def delivered(emulator):
    records = [json.loads(line) for line in h2(emulator.url + "/_emulator/records").splitlines() if line.strip()]
    return sorted(r["token"] for r in records if r.get("status") == 200 and r.get("token"))


def refused(call, code, status):
    with pytest.raises(botocore.exceptions.ClientError) as error:
        call()
    assert error.value.response["Error"]["Code"] == code, error.value.response
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    return error.value.response["Error"]["Message"]


ENV = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY}


@pytest.fixture(scope="module")
def stack():
    with Emulator("regions") as emulator:
        # The HTTP/S receiver listens on 127.0.0.1, which the SSRF guard refuses unless allowed.
        database = fresh_database()
        node = Node(["--database-url", database, "--account-id", ACCOUNT],
                    env={**ENV, "CLARION_SUBSCRIPTION_ALLOW_HOSTS": "127.0.0.1/32"})
        node.wait_ready()
        node.database = database
        yield node, emulator
        assert node.stop() == 0


def test_the_same_names_in_two_regions_are_two_resources_and_lists_are_isolated(stack):
    node, _ = stack
    east, west = client(node.url, "us-east-1"), client(node.url, "eu-west-1")
    east_topic = east.create_topic(Name="orders")["TopicArn"]
    west_topic = west.create_topic(Name="orders")["TopicArn"]
    assert east_topic == f"arn:aws:sns:us-east-1:{ACCOUNT}:orders"
    assert west_topic == f"arn:aws:sns:eu-west-1:{ACCOUNT}:orders"
    east.set_topic_attributes(TopicArn=east_topic, AttributeName="DisplayName", AttributeValue="East")
    assert west.get_topic_attributes(TopicArn=west_topic)["Attributes"].get("DisplayName", "") == ""
    assert east.get_topic_attributes(TopicArn=east_topic)["Attributes"]["DisplayName"] == "East"
    west.create_topic(Name="only-in-west")
    east_topics = [t["TopicArn"] for t in east.list_topics()["Topics"]]
    west_topics = [t["TopicArn"] for t in west.list_topics()["Topics"]]
    assert east_topic in east_topics and all(":us-east-1:" in arn for arn in east_topics)
    assert sorted(west_topics) == sorted([west_topic, f"arn:aws:sns:eu-west-1:{ACCOUNT}:only-in-west"])

    credential = json.dumps({"type": "service_account", "project_id": "p", "private_key": "x",
                             "client_email": "a@p.iam.gserviceaccount.com"})
    east_app = east.create_platform_application(Name="chat", Platform="GCM",
                                                Attributes={"PlatformCredential": credential})["PlatformApplicationArn"]
    west_app = west.create_platform_application(Name="chat", Platform="GCM",
                                                Attributes={"PlatformCredential": credential})["PlatformApplicationArn"]
    assert east_app == f"arn:aws:sns:us-east-1:{ACCOUNT}:app/GCM/chat"
    assert west_app == f"arn:aws:sns:eu-west-1:{ACCOUNT}:app/GCM/chat"
    assert [a["PlatformApplicationArn"] for a in west.list_platform_applications()["PlatformApplications"]] == [west_app]
    endpoint = west.create_platform_endpoint(PlatformApplicationArn=west_app, Token="west-device-" + "w" * 40)["EndpointArn"]
    assert endpoint.startswith(f"arn:aws:sns:eu-west-1:{ACCOUNT}:endpoint/GCM/chat/")
    assert east.list_endpoints_by_platform_application(PlatformApplicationArn=east_app)["Endpoints"] == []
    subscription = west.subscribe(TopicArn=west_topic, Protocol="application", Endpoint=endpoint)["SubscriptionArn"]
    assert subscription.startswith(f"arn:aws:sns:eu-west-1:{ACCOUNT}:orders:")
    assert [s["SubscriptionArn"] for s in west.list_subscriptions()["Subscriptions"]] == [subscription]
    assert east.list_subscriptions()["Subscriptions"] == []


def test_an_arn_of_another_region_is_refused_as_sns_refuses_it(stack):
    node, _ = stack
    east, west = client(node.url, "us-east-1"), client(node.url, "eu-west-1")
    west_topic = west.create_topic(Name="west-news")["TopicArn"]
    message = refused(lambda: east.publish(TopicArn=west_topic, Message="hi"), "InvalidParameter", 400)
    assert message.startswith("Invalid parameter: TopicArn")
    refused(lambda: east.get_topic_attributes(TopicArn=west_topic), "InvalidParameter", 400)
    refused(lambda: east.subscribe(TopicArn=west_topic, Protocol="https", Endpoint="https://receiver.example/sns"),
            "InvalidParameter", 400)
    # The name alone, in the caller's region, is another topic: it does not exist there.
    refused(lambda: east.publish(TopicArn=f"arn:aws:sns:us-east-1:{ACCOUNT}:west-news", Message="hi"), "NotFound", 404)
    # An endpoint ARN edited to name another region finds nothing either: the endpoint lives in its application's region.
    credential = json.dumps({"type": "service_account", "project_id": "p", "private_key": "x",
                             "client_email": "a@p.iam.gserviceaccount.com"})
    for c in (east, west):
        c.create_platform_application(Name="edited", Platform="GCM", Attributes={"PlatformCredential": credential})
    endpoint = west.create_platform_endpoint(PlatformApplicationArn=f"arn:aws:sns:eu-west-1:{ACCOUNT}:app/GCM/edited",
                                             Token="edited-device-" + "e" * 40)["EndpointArn"]
    edited = endpoint.replace(":eu-west-1:", ":us-east-1:")
    refused(lambda: east.get_endpoint_attributes(EndpointArn=edited), "NotFound", 404)
    refused(lambda: east.publish(TargetArn=edited, Message="hi"), "NotFound", 404)


def test_a_publish_reaches_only_its_own_regions_subscribers(stack):
    node, emulator = stack
    fcm = open(os.path.join(emulator.demo, "fcm-service-account.json")).read()
    tokens = {}
    for region in ("us-east-1", "ap-southeast-4"):
        sns = client(node.url, region)
        app = sns.create_platform_application(Name="fanout", Platform="GCM", Attributes={
            "PlatformCredential": fcm, "ProviderEndpoint": emulator.url})["PlatformApplicationArn"]
        topic = sns.create_topic(Name="fanout")["TopicArn"]
        tokens[region] = [f"fcm-{region}-{n}" for n in range(3)]
        for token in tokens[region]:
            endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
            sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)
    for region in ("us-east-1", "ap-southeast-4"):
        h2(emulator.url + "/_emulator/reset", "POST")
        client(node.url, region).publish(TopicArn=f"arn:aws:sns:{region}:{ACCOUNT}:fanout", Message="regional")
        wait_for(lambda: len(delivered(emulator)) >= 3, timeout=60, what=f"{region}'s deliveries")
        assert delivered(emulator) == sorted(tokens[region])


def test_http_notifications_carry_their_topics_region(stack):
    node, _ = stack
    west = client(node.url, "eu-west-1")
    topic = west.create_topic(Name="http-west")["TopicArn"]
    assert topic == f"arn:aws:sns:eu-west-1:{ACCOUNT}:http-west"
    receiver = Receiver()
    try:
        west.subscribe(TopicArn=topic, Protocol="http", Endpoint=receiver.url("/west"))
        headers, body, _ = receiver.wait("/west", "SubscriptionConfirmation")[-1]
        confirmation = json.loads(body)
        assert confirmation["TopicArn"] == topic and headers["x-amz-sns-topic-arn"] == topic
        verify(confirmation, node.url)
        status, answer = http_get(confirmation["SubscribeURL"])
        assert status == 200 and f"<SubscriptionArn>{topic}:" in answer, answer
        west.publish(TopicArn=topic, Message="to the west")
        headers, body, _ = receiver.wait("/west", "Notification")[-1]
        notification = json.loads(body)
        assert notification["TopicArn"] == topic and headers["x-amz-sns-topic-arn"] == topic
        assert headers["x-amz-sns-subscription-arn"].startswith(topic + ":")
        assert notification["UnsubscribeURL"].count("eu-west-1") >= 1
        verify(notification, node.url)
    finally:
        receiver.close()


def test_the_native_api_works_in_the_nodes_region_and_uuids_are_global(stack):
    node, _ = stack
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", node.database], capture_output=True,
                         text=True, timeout=60, env={**os.environ, **ENV})
    assert key.returncode == 0, key.stderr
    bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
    east, west = client(node.url, "us-east-1"), client(node.url, "eu-west-1")
    east.create_topic(Name="native-home")
    west.create_topic(Name="native-away")
    status, created = call(node.url + "/v1/topics", "POST", {"name": "made-natively"}, bearer)
    assert status == 201 and created["arn"] == f"arn:aws:sns:us-east-1:{ACCOUNT}:made-natively"
    assert f"arn:aws:sns:us-east-1:{ACCOUNT}:made-natively" in [t["TopicArn"] for t in east.list_topics()["Topics"]]
    status, page = call(node.url + "/v1/topics?limit=100", "GET", None, bearer)
    names = [t["name"] for t in page["items"]]
    assert "native-home" in names and "native-away" not in names, names
    # A name is the node's region's; an ARN of another region names nothing here.
    assert call(node.url + "/v1/topics/native-away", "GET", None, bearer)[0] == 404
    # An endpoint UUID is global: found in its own region, its ARN carrying that region.
    credential = json.dumps({"type": "service_account", "project_id": "p", "private_key": "x",
                             "client_email": "a@p.iam.gserviceaccount.com"})
    app = west.create_platform_application(Name="native-west", Platform="GCM",
                                           Attributes={"PlatformCredential": credential})["PlatformApplicationArn"]
    endpoint_arn = west.create_platform_endpoint(PlatformApplicationArn=app, Token="native-west-" + "n" * 40)["EndpointArn"]
    uuid = endpoint_arn.rsplit("/", 1)[1]
    status, endpoint = call(node.url + f"/v1/endpoints/{uuid}", "GET", None, bearer)
    assert status == 200 and endpoint["arn"] == endpoint_arn, endpoint
    # ...but it cannot be subscribed to a topic of another region, as in SNS.
    status, error = call(node.url + "/v1/topics/made-natively/subscriptions", "POST", {"endpoint": uuid}, bearer)
    assert status == 400 and error["error"]["field"] == "endpoint", error


def test_the_aws_cli_with_region(stack):
    node, _ = stack
    env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_CONFIG_FILE": "/dev/null",
           "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    env.pop("AWS_PROFILE", None)
    base = ["aws", "sns", "--endpoint-url", node.url, "--output", "json"]
    created = subprocess.run(base + ["--region", "sa-east-1", "create-topic", "--name", "cli-topic"],
                             capture_output=True, text=True, timeout=60, env=env)
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["TopicArn"] == f"arn:aws:sns:sa-east-1:{ACCOUNT}:cli-topic"
    listed = subprocess.run(base + ["--region", "sa-east-1", "list-topics"], capture_output=True, text=True, timeout=60, env=env)
    assert listed.returncode == 0, listed.stderr
    assert [t["TopicArn"] for t in json.loads(listed.stdout)["Topics"]] == [f"arn:aws:sns:sa-east-1:{ACCOUNT}:cli-topic"]


def test_an_unlisted_region_gets_the_sns_scope_error_when_regions_are_configured():
    node = Node(["--database-url", fresh_database(), "--account-id", ACCOUNT, "--region", "eu-central-2"],
                env={**ENV, "CLARION_REGIONS": "eu-central-2, us-gov-west-1"})
    try:
        node.wait_ready()
        listed = client(node.url, "us-gov-west-1").create_topic(Name="gov")["TopicArn"]
        assert listed == f"arn:aws-us-gov:sns:us-gov-west-1:{ACCOUNT}:gov"  # its partition (issue 16)
        assert client(node.url, "eu-central-2").list_topics()["Topics"] == []
        message = refused(lambda: client(node.url, "us-east-1").list_topics(), "SignatureDoesNotMatch", 403)
        assert message == "Credential should be scoped to a valid region, not 'us-east-1'. "
    finally:
        assert node.stop() == 0


def test_a_malformed_regions_setting_stops_the_node_with_the_reason():
    from conftest import CLARION
    for value, reason in (("us-east-1,Mars-1", "'Mars-1' is not a region name"),
                          ("eu-west-1", "must include CLARION_REGION")):
        result = subprocess.run([CLARION, "config", "print"], capture_output=True, text=True, timeout=60,
                                env={"PATH": "/usr/bin:/bin", "CLARION_REGIONS": value})
        assert result.returncode != 0
        assert "CLARION_REGIONS" in result.stderr and reason in result.stderr, result.stderr


def test_china_and_govcloud_regions_write_and_read_their_partitions_arns(stack):
    """Issue 16: an ARN's partition is its region's (botocore data/partitions.json: cn-* is aws-cn, us-gov-* is
    aws-us-gov), in every ARN the node writes (topics, applications, endpoints, subscriptions, AddPermission's
    principal) and reads; an ARN naming the region with another partition is refused."""
    node, emulator = stack
    fcm = open(os.path.join(emulator.demo, "fcm-service-account.json")).read()
    for region, partition in (("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov")):
        sns = client(node.url, region)
        prefix = f"arn:{partition}:sns:{region}:{ACCOUNT}:"
        topic = sns.create_topic(Name="partitioned")["TopicArn"]
        assert topic == prefix + "partitioned"
        assert [t["TopicArn"] for t in sns.list_topics()["Topics"]] == [topic]
        assert sns.get_topic_attributes(TopicArn=topic)["Attributes"]["TopicArn"] == topic
        app = sns.create_platform_application(Name="partitioned", Platform="GCM", Attributes={
            "PlatformCredential": fcm, "ProviderEndpoint": emulator.url})["PlatformApplicationArn"]
        assert app == prefix + "app/GCM/partitioned"
        token = f"fcm-{region}-partitioned"
        endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token=token)["EndpointArn"]
        assert endpoint.startswith(prefix + "endpoint/GCM/partitioned/")
        assert sns.get_endpoint_attributes(EndpointArn=endpoint)["Attributes"]["Token"] == token
        subscription = sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)["SubscriptionArn"]
        assert subscription.startswith(topic + ":")
        assert sns.get_subscription_attributes(SubscriptionArn=subscription)["Attributes"]["TopicArn"] == topic
        h2(emulator.url + "/_emulator/reset", "POST")
        sns.publish(TopicArn=topic, Message="to the partition")
        sns.publish(TargetArn=endpoint, Message="directly")
        wait_for(lambda: len(delivered(emulator)) >= 2, timeout=60, what=f"{region}'s deliveries")
        assert delivered(emulator) == [token, token]
        # AddPermission writes the other account's root principal in the topic's partition.
        sns.add_permission(TopicArn=topic, Label="friend", AWSAccountId=["210987654321"], ActionName=["Publish"])
        policy = json.loads(sns.get_topic_attributes(TopicArn=topic)["Attributes"]["Policy"])
        friend = [s for s in policy["Statement"] if s.get("Sid") == "friend"]
        assert friend[0]["Principal"]["AWS"] == f"arn:{partition}:iam::210987654321:root", policy
        # The region's resources under the partition `aws` are no ARN SNS writes: refused, nothing found or changed.
        wrong = topic.replace(f"arn:{partition}:", "arn:aws:", 1)
        message = refused(lambda: sns.publish(TopicArn=wrong, Message="hi"), "InvalidParameter", 400)
        assert message.startswith("Invalid parameter: TopicArn"), message
        refused(lambda: sns.get_endpoint_attributes(EndpointArn=endpoint.replace(f"arn:{partition}:", "arn:aws:", 1)),
                "InvalidParameter", 400)
    # The partition `aws` stays what it was.
    assert client(node.url, "us-east-1").create_topic(Name="partitioned")["TopicArn"] == f"arn:aws:sns:us-east-1:{ACCOUNT}:partitioned"
