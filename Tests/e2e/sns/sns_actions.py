"""Drives every SNS action Clarion serves with the real boto3 client.

Run by Tests/ClarionAPITests/SNSActions/SNSActionsEndToEndTests.swift against a live HTTPServer:
    CLARION_SNS_ENDPOINT=http://127.0.0.1:PORT CLARION_SNS_KEY=... CLARION_SNS_SECRET=... python3 sns_actions.py
Prints one "PASS <name>" line per check group, "MESSAGE <id>" for each stored publish, and "ALL OK" at the end;
exits non-zero at the first failed expectation.
"""
import json
import os
import sys

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["CLARION_SNS_ENDPOINT"]
REGION = os.environ.get("CLARION_SNS_REGION", "us-east-1")
ACCOUNT = os.environ.get("CLARION_SNS_ACCOUNT", "123456789012")


def client(secret=None):
    return boto3.client(
        "sns",
        endpoint_url=ENDPOINT,
        region_name=REGION,
        aws_access_key_id=os.environ["CLARION_SNS_KEY"],
        aws_secret_access_key=secret or os.environ["CLARION_SNS_SECRET"],
        config=Config(retries={"max_attempts": 1}),
    )


sns = client()


def check(condition, message):
    if not condition:
        print("FAIL " + message, flush=True)
        sys.exit(1)


def expect_error(code, call, *args, contains=None, status=None, **kwargs):
    try:
        call(*args, **kwargs)
    except ClientError as error:
        got = error.response["Error"]["Code"]
        text = error.response["Error"].get("Message", "")
        check(got == code, f"{call.__name__}: expected {code}, got {got}: {text}")
        if contains is not None:
            check(contains in text, f"{call.__name__}: message {text!r} lacks {contains!r}")
        if status is not None:
            got_status = error.response["ResponseMetadata"]["HTTPStatusCode"]
            check(got_status == status, f"{call.__name__}: expected HTTP {status}, got {got_status}")
        return text
    check(False, f"{call.__name__}: expected {code}, got success")


def attributes(pairs):
    return {k: v for k, v in pairs.items()}


# --- Authentication ------------------------------------------------------------------------------------------
expect_error("SignatureDoesNotMatch", client("wrong-secret").list_topics, status=403)
unknown = boto3.client("sns", endpoint_url=ENDPOINT, region_name=REGION, aws_access_key_id="AKIAUNKNOWNKEY00000",
                       aws_secret_access_key="x", config=Config(retries={"max_attempts": 1}))
expect_error("InvalidClientTokenId", unknown.list_topics, status=403)
print("PASS wrong secret refused", flush=True)

# --- Platform applications (C.7) ------------------------------------------------------------------------------
gcm = sns.create_platform_application(
    Name="news-android", Platform="GCM",
    Attributes={"PlatformCredential": "AAAA-server-key-secret", "SuccessFeedbackSampleRate": "30"},
)["PlatformApplicationArn"]
check(gcm == f"arn:aws:sns:{REGION}:{ACCOUNT}:app/GCM/news-android", f"app ARN {gcm}")
apns = sns.create_platform_application(
    Name="news-ios", Platform="APNS",
    Attributes={"PlatformCredential": "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----",
                "PlatformPrincipal": "KEYID12345", "ApplePlatformTeamID": "TEAM123456",
                "ApplePlatformBundleID": "com.example.news"},
)["PlatformApplicationArn"]
again = sns.create_platform_application(Name="news-android", Platform="GCM",
                                        Attributes={"PlatformCredential": "AAAA-server-key-secret"})
check(again["PlatformApplicationArn"] == gcm, "repeated create returns the same ARN")
got = sns.get_platform_application_attributes(PlatformApplicationArn=gcm)["Attributes"]
check("PlatformCredential" not in got and "PlatformPrincipal" not in got, f"credential leaked: {got}")
check(got.get("Enabled") == "true" and got.get("SuccessFeedbackSampleRate") == "30", f"attributes {got}")
check(got.get("AuthenticationMethod") == "Key", f"GCM with an API key: {got}")
fcm_v1 = sns.create_platform_application(Name="news-fcm-v1", Platform="GCM", Attributes={
    "PlatformCredential": json.dumps({"type": "service_account", "project_id": "p", "private_key": "secret-key"})})["PlatformApplicationArn"]
got = sns.get_platform_application_attributes(PlatformApplicationArn=fcm_v1)["Attributes"]
check(got.get("AuthenticationMethod") == "Token" and "secret-key" not in json.dumps(got), f"GCM with a service account: {got}")
sns.delete_platform_application(PlatformApplicationArn=fcm_v1)
got = sns.get_platform_application_attributes(PlatformApplicationArn=apns)["Attributes"]
check(got.get("AuthenticationMethod") == "Token" and "PlatformCredential" not in got, f"apns attributes {got}")
expect_error("InvalidParameter", sns.create_platform_application, Name="bad name!", Platform="GCM",
             Attributes={"PlatformCredential": "x"})
expect_error("InvalidParameter", sns.create_platform_application, Name="x", Platform="WNS",
             Attributes={"PlatformCredential": "x"})
expect_error("InvalidParameter", sns.create_platform_application, Name="nocred", Platform="GCM", Attributes={})
expect_error("InvalidParameter", sns.create_platform_application, Name="noprincipal", Platform="ADM",
             Attributes={"PlatformCredential": "secret"})
expect_error("NotFound", sns.get_platform_application_attributes,
             PlatformApplicationArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:app/GCM/absent", status=404)
expect_error("InvalidParameter", sns.get_platform_application_attributes, PlatformApplicationArn="arn:nope")
sns.set_platform_application_attributes(PlatformApplicationArn=gcm, Attributes={
    "SuccessFeedbackSampleRate": "75", "PlatformCredential": "rotated-secret"})
got = sns.get_platform_application_attributes(PlatformApplicationArn=gcm)["Attributes"]
check(got["SuccessFeedbackSampleRate"] == "75" and "PlatformCredential" not in got, f"after set {got}")
expect_error("InvalidParameter", sns.set_platform_application_attributes, PlatformApplicationArn=gcm,
             Attributes={"SuccessFeedbackSampleRate": "101"})
expect_error("InvalidParameter", sns.set_platform_application_attributes, PlatformApplicationArn=gcm,
             Attributes={"NoSuchAttribute": "1"})
apps = sns.list_platform_applications()["PlatformApplications"]
check(sorted(a["PlatformApplicationArn"] for a in apps) == sorted([gcm, apns]), f"list apps {apps}")
check(all("PlatformCredential" not in a["Attributes"] for a in apps), "list leaks credentials")
print("PASS platform applications", flush=True)

# --- Endpoints (C.8) ------------------------------------------------------------------------------------------
token = "fcm-token-" + "a" * 40
endpoint = sns.create_platform_endpoint(PlatformApplicationArn=gcm, Token=token, CustomUserData="alice")["EndpointArn"]
prefix = f"arn:aws:sns:{REGION}:{ACCOUNT}:endpoint/GCM/news-android/"
check(endpoint.startswith(prefix) and len(endpoint) == len(prefix) + 36, f"endpoint ARN {endpoint}")
same = sns.create_platform_endpoint(PlatformApplicationArn=gcm, Token=token, CustomUserData="alice")["EndpointArn"]
check(same == endpoint, "SNS C.8: same token and attributes returns the existing ARN")
text = expect_error("InvalidParameter", sns.create_platform_endpoint, PlatformApplicationArn=gcm, Token=token,
                    CustomUserData="bob")
check(text == f"Invalid parameter: Token Reason: Endpoint {endpoint} already exists with the same Token, but different attributes.",
      f"C.8 wording: {text}")
expect_error("InvalidParameter", sns.create_platform_endpoint, PlatformApplicationArn=gcm, Token=token,
             Attributes={"Enabled": "false"}, contains="already exists with the same Token, but different attributes.")
expect_error("InvalidParameter", sns.create_platform_endpoint, PlatformApplicationArn=gcm, Token="t2",
             CustomUserData="x" * 2049)
expect_error("InvalidParameter", sns.create_platform_endpoint, PlatformApplicationArn=apns, Token="not-hex")
expect_error("InvalidParameter", sns.create_platform_endpoint, PlatformApplicationArn=apns, Token="a" * 402,
             contains="no more than 400 hexadecimal characters")
expect_error("NotFound", sns.create_platform_endpoint,
             PlatformApplicationArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:app/GCM/absent", Token="x")
ios = sns.create_platform_endpoint(PlatformApplicationArn=apns, Token="ABCDEF0123")["EndpointArn"]
got = sns.get_endpoint_attributes(EndpointArn=ios)["Attributes"]
check(got == {"Token": "abcdef0123", "Enabled": "true"}, f"ios attributes {got}")
got = sns.get_endpoint_attributes(EndpointArn=endpoint)["Attributes"]
check(got == {"Token": token, "Enabled": "true", "CustomUserData": "alice"}, f"attributes {got}")
sns.set_endpoint_attributes(EndpointArn=endpoint, Attributes={"Enabled": "false", "CustomUserData": "carol"})
got = sns.get_endpoint_attributes(EndpointArn=endpoint)["Attributes"]
check(got["Enabled"] == "false" and got["CustomUserData"] == "carol", f"after set {got}")
other = sns.create_platform_endpoint(PlatformApplicationArn=gcm, Token="other-token")["EndpointArn"]
expect_error("InvalidParameter", sns.set_endpoint_attributes, EndpointArn=other, Attributes={"Token": token},
             contains="already exists with the same Token")
expect_error("InvalidParameter", sns.set_endpoint_attributes, EndpointArn=other, Attributes={"Enabled": "maybe"})
missing = prefix + "00000000-0000-4000-8000-000000000000"
expect_error("NotFound", sns.get_endpoint_attributes, EndpointArn=missing, status=404)
expect_error("NotFound", sns.set_endpoint_attributes, EndpointArn=missing, Attributes={"Enabled": "true"})
sns.delete_endpoint(EndpointArn=other)
sns.delete_endpoint(EndpointArn=other)  # idempotent
expect_error("NotFound", sns.get_endpoint_attributes, EndpointArn=other)
print("PASS endpoints", flush=True)

# --- Pagination: 250 endpoints, 100 a page ---------------------------------------------------------------------
paged_app = sns.create_platform_application(Name="paged", Platform="GCM",
                                            Attributes={"PlatformCredential": "k"})["PlatformApplicationArn"]
created = [sns.create_platform_endpoint(PlatformApplicationArn=paged_app, Token=f"tok-{n:04d}")["EndpointArn"]
           for n in range(250)]
pages, seen, kwargs = [], [], {"PlatformApplicationArn": paged_app}
while True:
    page = sns.list_endpoints_by_platform_application(**kwargs)
    pages.append(len(page["Endpoints"]))
    seen += [e["EndpointArn"] for e in page["Endpoints"]]
    if "NextToken" not in page:
        break
    kwargs["NextToken"] = page["NextToken"]
check(pages == [100, 100, 50], f"pages {pages}")
check(seen == created, "every endpoint once, in creation order")
paginated = [e["EndpointArn"] for p in sns.get_paginator("list_endpoints_by_platform_application")
             .paginate(PlatformApplicationArn=paged_app) for e in p["Endpoints"]]
check(paginated == created, "boto3 paginator sees the same 250")
expect_error("InvalidParameter", sns.list_endpoints_by_platform_application, PlatformApplicationArn=paged_app,
             NextToken="not-a-token")
print("PASS pagination", flush=True)

# --- Topics ---------------------------------------------------------------------------------------------------
topic = sns.create_topic(Name="breaking", Attributes={"DisplayName": "Breaking"},
                         Tags=[{"Key": "team", "Value": "push"}])["TopicArn"]
check(topic == f"arn:aws:sns:{REGION}:{ACCOUNT}:breaking", f"topic ARN {topic}")
check(sns.create_topic(Name="breaking")["TopicArn"] == topic, "CreateTopic is idempotent by name")
expect_error("InvalidParameter", sns.create_topic, Name="breaking", Attributes={"DisplayName": "Other"})
expect_error("InvalidParameter", sns.create_topic, Name="bad name")
got = sns.get_topic_attributes(TopicArn=topic)["Attributes"]
check(got["TopicArn"] == topic and got["DisplayName"] == "Breaking" and got["Owner"] == ACCOUNT, f"topic attributes {got}")
check(got["SubscriptionsConfirmed"] == "0" and json.loads(got["Policy"])["Statement"], f"topic attributes {got}")
sns.set_topic_attributes(TopicArn=topic, AttributeName="DisplayName", AttributeValue="Breaking News")
check(sns.get_topic_attributes(TopicArn=topic)["Attributes"]["DisplayName"] == "Breaking News", "SetTopicAttributes")
expect_error("InvalidParameter", sns.set_topic_attributes, TopicArn=topic, AttributeName="Bogus", AttributeValue="1")
expect_error("InvalidParameter", sns.set_topic_attributes, TopicArn=topic, AttributeName="Policy", AttributeValue="{nope")
expect_error("NotFound", sns.get_topic_attributes, TopicArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:absent", status=404)
expect_error("AuthorizationError", sns.get_topic_attributes, TopicArn=f"arn:aws:sns:{REGION}:999999999999:breaking")
for n in range(105):
    sns.create_topic(Name=f"bulk-{n:03d}")
listed = [t["TopicArn"] for p in sns.get_paginator("list_topics").paginate() for t in p["Topics"]]
check(len(listed) == 106 and listed[0] == topic, f"ListTopics pages: {len(listed)}")
first = sns.list_topics()
check(len(first["Topics"]) == 100 and "NextToken" in first, "ListTopics 100 a page")
print("PASS topics", flush=True)

# --- Subscriptions --------------------------------------------------------------------------------------------
sns.set_endpoint_attributes(EndpointArn=endpoint, Attributes={"Enabled": "true"})
subscription = sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint,
                             Attributes={"FilterPolicy": json.dumps({"kind": ["news"]})},
                             ReturnSubscriptionArn=True)["SubscriptionArn"]
check(subscription.startswith(topic + ":") and len(subscription) == len(topic) + 37, f"subscription ARN {subscription}")
check(sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=endpoint)["SubscriptionArn"] == subscription,
      "subscribing twice returns the same subscription")
ios_subscription = sns.subscribe(TopicArn=topic, Protocol="application", Endpoint=ios)["SubscriptionArn"]
expect_error("InvalidParameter", sns.subscribe, TopicArn=topic, Protocol="email", Endpoint="a@example.com")
expect_error("NotFound", sns.subscribe, TopicArn=topic, Protocol="application", Endpoint=missing)
expect_error("NotFound", sns.subscribe, TopicArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:absent", Protocol="application",
             Endpoint=endpoint)
expect_error("InvalidParameter", sns.subscribe, TopicArn=topic, Protocol="application", Endpoint=ios,
             Attributes={"FilterPolicy": "{not json"})
got = sns.get_subscription_attributes(SubscriptionArn=subscription)["Attributes"]
check(got["TopicArn"] == topic and got["Endpoint"] == endpoint and got["Protocol"] == "application", f"sub attrs {got}")
check(json.loads(got["FilterPolicy"]) == {"kind": ["news"]} and got["PendingConfirmation"] == "false", f"sub attrs {got}")
sns.set_subscription_attributes(SubscriptionArn=subscription, AttributeName="RawMessageDelivery", AttributeValue="true")
sns.set_subscription_attributes(SubscriptionArn=subscription, AttributeName="FilterPolicy",
                                AttributeValue=json.dumps({"kind": ["sports"]}))
got = sns.get_subscription_attributes(SubscriptionArn=subscription)["Attributes"]
check(got["RawMessageDelivery"] == "true" and json.loads(got["FilterPolicy"]) == {"kind": ["sports"]}, f"after set {got}")
expect_error("InvalidParameter", sns.set_subscription_attributes, SubscriptionArn=subscription,
             AttributeName="FilterPolicyScope", AttributeValue="Nowhere")
by_topic = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
check([s["SubscriptionArn"] for s in by_topic] == [subscription, ios_subscription], f"by topic {by_topic}")
check(by_topic[0]["Endpoint"] == endpoint and by_topic[0]["Owner"] == ACCOUNT, f"member {by_topic[0]}")
everything = sns.list_subscriptions()["Subscriptions"]
check(sorted(s["SubscriptionArn"] for s in everything) == sorted([subscription, ios_subscription]), f"all {everything}")
check(sns.get_topic_attributes(TopicArn=topic)["Attributes"]["SubscriptionsConfirmed"] == "2", "count")
sns.unsubscribe(SubscriptionArn=ios_subscription)
sns.unsubscribe(SubscriptionArn=ios_subscription)  # idempotent
expect_error("NotFound", sns.get_subscription_attributes, SubscriptionArn=ios_subscription)
check(len(sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]) == 1, "after unsubscribe")
print("PASS subscriptions", flush=True)

# --- Publish (C.2, C.4) ---------------------------------------------------------------------------------------
def published(response):
    message_id = response["MessageId"]
    check(len(message_id) == 36, f"MessageId {message_id}")
    print("MESSAGE " + message_id, flush=True)
    return message_id

published(sns.publish(TargetArn=endpoint, Message="hello"))
published(sns.publish(TargetArn=endpoint, MessageStructure="json",
                      Message=json.dumps({"GCM": json.dumps({"notification": {"title": "hi"}})})))
published(sns.publish(TopicArn=topic, Subject="News", MessageStructure="json",
                      Message=json.dumps({"default": "plain", "APNS": json.dumps({"aps": {"alert": "hi"}})}),
                      MessageAttributes={"AWS.SNS.MOBILE.APNS.PUSH_TYPE": {"DataType": "String", "StringValue": "alert"},
                                         "AWS.SNS.MOBILE.FCM.TTL": {"DataType": "Number", "StringValue": "60"},
                                         "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}}))
published(sns.publish(TargetArn=topic, Message="to a topic through TargetArn"))
expect_error("InvalidParameter", sns.publish, TargetArn=endpoint, MessageStructure="json", Message="{not json",
             contains="JSON message body failed to parse")
expect_error("InvalidParameter", sns.publish, TopicArn=topic, MessageStructure="json",
             Message=json.dumps({"APNS": json.dumps({"aps": {}})}), contains="No default entry")
expect_error("InvalidParameter", sns.publish, TargetArn=endpoint, MessageStructure="json",
             Message=json.dumps({"default": 1}), contains="JSON must contain an entry for 'default' or 'GCM'")
expect_error("InvalidParameter", sns.publish, TargetArn=endpoint, MessageStructure="json",
             Message=json.dumps({"GCM": {"notification": {}}}))
expect_error("InvalidParameter", sns.publish, TargetArn=endpoint, Message="x" * (262144 + 1), contains="Message too long")
published(sns.publish(TargetArn=endpoint, Message="y" * 262144))
expect_error("InvalidParameter", sns.publish, TargetArn=endpoint, Message="m",
             MessageAttributes={"AWS.SNS.MOBILE.APNS.PRIORITY": {"DataType": "Number", "StringValue": "42"}})
expect_error("NotFound", sns.publish, TargetArn=missing, Message="m", status=404)
expect_error("NotFound", sns.publish, TopicArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:absent", Message="m", status=404)
expect_error("InvalidParameter", sns.publish, Message="m")
expect_error("InvalidParameter", sns.publish, TopicArn=topic, Message="m", MessageGroupId="g", contains="MessageGroupId")
expect_error("InvalidParameter", sns.publish, TopicArn=topic, Message="m", Subject="line\nbreak")
expect_error("InvalidParameter", sns.publish, TargetArn=endpoint, TopicArn=topic, Message="m")
sns.set_endpoint_attributes(EndpointArn=endpoint, Attributes={"Enabled": "false"})
expect_error("EndpointDisabled", sns.publish, TargetArn=endpoint, Message="m", status=400)
sns.set_endpoint_attributes(EndpointArn=endpoint, Attributes={"Enabled": "true"})
sns.set_platform_application_attributes(PlatformApplicationArn=gcm, Attributes={"Enabled": "false"})
check(sns.get_platform_application_attributes(PlatformApplicationArn=gcm)["Attributes"]["Enabled"] == "false", "app off")
expect_error("PlatformApplicationDisabled", sns.publish, TargetArn=endpoint, Message="m", status=400)
sns.set_platform_application_attributes(PlatformApplicationArn=gcm, Attributes={"Enabled": "true"})
published(sns.publish(TargetArn=endpoint, Message="enabled again"))
print("PASS publish", flush=True)

# --- PublishBatch ---------------------------------------------------------------------------------------------
batch = sns.publish_batch(TopicArn=topic, PublishBatchRequestEntries=[
    {"Id": "one", "Message": "first"},
    {"Id": "two", "Message": json.dumps({"default": "second"}), "MessageStructure": "json"},
    {"Id": "bad", "Message": json.dumps({"GCM": "{}"}), "MessageStructure": "json"},
    {"Id": "three", "Message": "third", "Subject": "s",
     "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}},
])
check(sorted(s["Id"] for s in batch["Successful"]) == ["one", "three", "two"], f"batch successful {batch}")
check([(f["Id"], f["Code"], f["SenderFault"]) for f in batch["Failed"]] == [("bad", "InvalidParameter", True)], f"failed {batch}")
for s in batch["Successful"]:
    published(s)
expect_error("EmptyBatchRequest", sns.publish_batch, TopicArn=topic, PublishBatchRequestEntries=[])
expect_error("TooManyEntriesInBatchRequest", sns.publish_batch, TopicArn=topic,
             PublishBatchRequestEntries=[{"Id": f"e{n}", "Message": "m"} for n in range(11)])
expect_error("BatchEntryIdsNotDistinct", sns.publish_batch, TopicArn=topic,
             PublishBatchRequestEntries=[{"Id": "same", "Message": "a"}, {"Id": "same", "Message": "b"}])
expect_error("InvalidBatchEntryId", sns.publish_batch, TopicArn=topic,
             PublishBatchRequestEntries=[{"Id": "no spaces", "Message": "a"}])
expect_error("BatchRequestTooLong", sns.publish_batch, TopicArn=topic,
             PublishBatchRequestEntries=[{"Id": f"e{n}", "Message": "z" * 100000} for n in range(3)])
expect_error("NotFound", sns.publish_batch, TopicArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:absent",
             PublishBatchRequestEntries=[{"Id": "a", "Message": "a"}])
print("PASS publish batch", flush=True)

# --- Tags -----------------------------------------------------------------------------------------------------
check(sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [{"Key": "team", "Value": "push"}], "tags from CreateTopic")
sns.tag_resource(ResourceArn=topic, Tags=[{"Key": "env", "Value": "prod"}, {"Key": "team", "Value": "mobile"}])
check(sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [{"Key": "env", "Value": "prod"}, {"Key": "team", "Value": "mobile"}],
      "tags after TagResource")
sns.untag_resource(ResourceArn=topic, TagKeys=["env"])
check(sns.list_tags_for_resource(ResourceArn=topic)["Tags"] == [{"Key": "team", "Value": "mobile"}], "tags after untag")
expect_error("TagLimitExceeded", sns.tag_resource, ResourceArn=topic,
             Tags=[{"Key": f"k{n}", "Value": "v"} for n in range(50)])
expect_error("ResourceNotFound", sns.tag_resource, ResourceArn=f"arn:aws:sns:{REGION}:{ACCOUNT}:absent",
             Tags=[{"Key": "a", "Value": "b"}])
sns.tag_resource(ResourceArn=gcm, Tags=[{"Key": "app", "Value": "yes"}])
check(sns.list_tags_for_resource(ResourceArn=gcm)["Tags"] == [{"Key": "app", "Value": "yes"}], "application tags")
print("PASS tags", flush=True)

# --- Deletes --------------------------------------------------------------------------------------------------
sns.delete_topic(TopicArn=topic)
sns.delete_topic(TopicArn=topic)  # SNS: deleting a missing topic is not an error
expect_error("NotFound", sns.get_topic_attributes, TopicArn=topic)
expect_error("NotFound", sns.get_subscription_attributes, SubscriptionArn=subscription)
sns.delete_platform_application(PlatformApplicationArn=paged_app)
expect_error("NotFound", sns.get_endpoint_attributes, EndpointArn=created[0])
expect_error("NotFound", sns.list_endpoints_by_platform_application, PlatformApplicationArn=paged_app)
sns.delete_platform_application(PlatformApplicationArn=paged_app)  # idempotent
print("PASS deletes", flush=True)

print("ALL OK", flush=True)
