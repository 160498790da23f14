"""Issue 5 end to end: the real boto3 client and aws CLI against a running `clarion serve`."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import CLARION, Node

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "AKIACLARIONE2ETEST01"
SECRET = "e2e-secret-0123456789abcdefghijklmnopqrstuv"


@pytest.fixture(scope="module")
def node():
    data = tempfile.mkdtemp(prefix="clarion-e2e-sns-")
    # An API-only node: the action script's applications carry credentials no provider would accept, and a
    # dispatcher would (rightly) disable them mid-script. Delivery is covered by test_delivery.py.
    n = Node(["--data-dir", data, "--role", "api"], env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET})
    n.data_dir = data
    n.wait_ready()
    yield n
    assert n.stop() == 0


def aws(node, *args, secret=SECRET):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1",
               AWS_PAGER="", AWS_MAX_ATTEMPTS="1")
    env.pop("AWS_PROFILE", None)
    return subprocess.run(["aws", "--endpoint-url", node.url, "--output", "json", "sns", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_boto3_drives_every_action_against_the_running_node(node):
    env = dict(os.environ, CLARION_SNS_ENDPOINT=node.url, CLARION_SNS_KEY=KEY, CLARION_SNS_SECRET=SECRET)
    r = subprocess.run([sys.executable, os.path.join(HERE, "sns", "sns_actions.py")], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


def test_aws_cli_topics_subscriptions_and_publish(node):
    created = aws(node, "create-topic", "--name", "cli-news")
    assert created.returncode == 0, created.stderr
    topic = json.loads(created.stdout)["TopicArn"]
    assert topic == "arn:aws:sns:us-east-1:123456789012:cli-news"
    listed = json.loads(aws(node, "list-topics").stdout)
    assert topic in [t["TopicArn"] for t in listed["Topics"]]
    app = aws(node, "create-platform-application", "--name", "cli-app", "--platform", "ADM",
              "--attributes", "PlatformPrincipal=amzn1.application-oa2-client.cli,PlatformCredential=cli-secret")
    assert app.returncode == 0, app.stderr
    app_arn = json.loads(app.stdout)["PlatformApplicationArn"]
    endpoint = aws(node, "create-platform-endpoint", "--platform-application-arn", app_arn, "--token", "amzn1.adm-registration.v3.cli-token")
    assert endpoint.returncode == 0, endpoint.stderr
    endpoint_arn = json.loads(endpoint.stdout)["EndpointArn"]
    sub = aws(node, "subscribe", "--topic-arn", topic, "--protocol", "application", "--notification-endpoint", endpoint_arn)
    assert sub.returncode == 0, sub.stderr
    published = aws(node, "publish", "--target-arn", endpoint_arn, "--message", "hello from the CLI")
    assert published.returncode == 0, published.stderr
    assert len(json.loads(published.stdout)["MessageId"]) == 36
    no_default = aws(node, "publish", "--topic-arn", topic, "--message-structure", "json", "--message", '{"ADM": "{}"}')
    assert no_default.returncode != 0 and "InvalidParameter" in no_default.stderr


def test_aws_cli_with_a_wrong_secret_is_refused(node):
    r = aws(node, "list-topics", secret="not-the-secret")
    assert r.returncode != 0
    assert "SignatureDoesNotMatch" in r.stderr


def test_native_api_with_a_bearer_key_shares_resources_with_the_sns_api(node):
    import urllib.request
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--name", "e2e",
                          "--data-dir", node.data_dir], capture_output=True, text=True, timeout=60)
    assert key.returncode == 0, key.stderr
    token = key.stdout.split("key: ")[1].strip()

    def call(method, path, body=None, bearer=token):
        request = urllib.request.Request(node.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json",
                                                  **({"Authorization": "Bearer " + bearer} if bearer else {})})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    assert call("GET", "/v1/topics", bearer=None)[0] == 401
    created = aws(node, "create-topic", "--name", "shared-topic")
    assert created.returncode == 0, created.stderr
    status, topic = call("GET", "/v1/topics/shared-topic")
    assert status == 200, topic
    assert topic["arn"] == json.loads(created.stdout)["TopicArn"]
    # The API reference the binary serves is a valid OpenAPI 3.1 document and covers every route family (the Swift
    # RouteTableTests compare it with the route table route by route).
    from openapi_spec_validator import validate
    status, spec = call("GET", "/v1/openapi.json", bearer=None)
    assert status == 200 and spec["openapi"] == "3.1.0"
    validate(spec)
    for path in ["/", "/health", "/v1/publish", "/v1/mobile-apps", "/v1/beacons/open", "/meiro_mobile",
                 "/api/v1.0/orgs/{org}/pushdeviceregistration/devices"]:
        assert path in spec["paths"], path


def test_nul_bytes_and_attribute_rules_are_invalid_parameter(node):
    """NUL is refused in every parameter (it would cut C strings and PostgreSQL text short: `tok\\0x` and `tok`
    became one endpoint); SNS's message attribute rules: a Number value is a number, a String.Array a JSON array."""
    import boto3
    import botocore.exceptions
    from botocore.config import Config
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    app = sns.create_platform_application(Name="nul-app", Platform="ADM", Attributes={
        "PlatformPrincipal": "amzn1.application-oa2-client.nul", "PlatformCredential": "nul-secret"})["PlatformApplicationArn"]
    for call in [lambda: sns.create_platform_endpoint(PlatformApplicationArn=app, Token="tok\x00nul"),
                 lambda: sns.create_platform_endpoint(PlatformApplicationArn=app, Token="tok", CustomUserData="a\x00b"),
                 lambda: sns.create_topic(Name="t", Attributes={"DisplayName": "a\x00b"})]:
        with pytest.raises(botocore.exceptions.ClientError) as error:
            call()
        assert error.value.response["Error"]["Code"] == "InvalidParameter", error.value.response
        assert "NUL" in error.value.response["Error"]["Message"]
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="tok")["EndpointArn"]
    with pytest.raises(botocore.exceptions.ClientError) as error:
        sns.publish(TargetArn=endpoint, Message="hello\x00there")
    assert error.value.response["Error"]["Code"] == "InvalidParameter"
    for attributes in [{"n": {"DataType": "Number", "StringValue": "twelve"}},
                       {"a": {"DataType": "String.Array", "StringValue": "not an array"}}]:
        with pytest.raises(botocore.exceptions.ClientError) as error:
            sns.publish(TargetArn=endpoint, Message="hello", MessageAttributes=attributes)
        assert error.value.response["Error"]["Code"] == "ParameterValueInvalid", error.value.response
    sns.publish(TargetArn=endpoint, Message="hello", MessageAttributes={
        "n": {"DataType": "Number", "StringValue": "12.5"}, "a": {"DataType": "String.Array", "StringValue": '["x", 1]'}})


def test_sns_error_codes_statuses_and_check_order(node):
    """SNS's own answers where a migrating backend relies on them (issue 16), as the AWS SDK reads them
    (`Error.Code` and `ResponseMetadata.HTTPStatusCode`):
    - a well-formed ARN of the wrong kind (an SQS queue's where a subscription's is expected, a topic's where an
      endpoint's is) is NotFound 404, not InvalidParameter 400;
    - SNS checks a direct publish's endpoint before its message: to a disabled endpoint, a message that would not
      parse is still EndpointDisabled 400 "Endpoint is disabled";
    - tag actions on an ARN that names no resource: ResourceNotFound 404 "Resource does not exist"."""
    import boto3
    import botocore.exceptions
    from botocore.config import Config
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))

    def error(call, **kwargs):
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            call(**kwargs)
        e = raised.value.response
        return e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Message"]

    queue = "arn:aws:sqs:us-east-1:123456789012:queue:0b6941c3-f04d-4d3e-a63d-0b6941c3f04d"
    assert error(sns.get_subscription_attributes, SubscriptionArn=queue)[:2] == ("NotFound", 404)
    assert error(sns.get_topic_attributes, TopicArn="arn:aws:sqs:us-east-1:123456789012:orders")[:2] == ("NotFound", 404)
    topic = sns.create_topic(Name="order-topic")["TopicArn"]
    assert error(sns.get_endpoint_attributes, EndpointArn=topic)[:2] == ("NotFound", 404)
    assert error(sns.unsubscribe, SubscriptionArn=topic)[:2] == ("NotFound", 404)
    # Not an ARN at all stays InvalidParameter.
    assert error(sns.get_topic_attributes, TopicArn="orders")[:2] == ("InvalidParameter", 400)

    app = sns.create_platform_application(Name="order-app", Platform="GCM",
                                          Attributes={"PlatformCredential": "{}"})["PlatformApplicationArn"]
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=app, Token="order-token")["EndpointArn"]
    # Enabled: the message's own error.
    assert error(sns.publish, TargetArn=endpoint, Message="not json", MessageStructure="json")[:2] == ("InvalidParameter", 400)
    sns.set_endpoint_attributes(EndpointArn=endpoint, Attributes={"Enabled": "false"})
    assert error(sns.publish, TargetArn=endpoint, Message="not json", MessageStructure="json") == \
        ("EndpointDisabled", 400, "Endpoint is disabled")
    assert error(sns.publish, TargetArn=endpoint, Message="fine") == ("EndpointDisabled", 400, "Endpoint is disabled")

    missing = "arn:aws:sns:us-east-1:123456789012:no-such-topic"
    assert error(sns.tag_resource, ResourceArn=missing, Tags=[{"Key": "a", "Value": "b"}]) == \
        ("ResourceNotFound", 404, "Resource does not exist")
    assert error(sns.list_tags_for_resource, ResourceArn=missing) == ("ResourceNotFound", 404, "Resource does not exist")
