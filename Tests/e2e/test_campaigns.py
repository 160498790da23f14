"""Issue 8 end to end against `clarion serve --with-emulator`: a campaign published through POST /v1/publish
arrives with its namespace and a delivery id; the open beacon counts once; the report shows it."""
import json
import subprocess
import time

from conftest import CLARION
from test_delivery import applications, h2_get, stack, wait_for  # noqa: F401  (fixture re-used)
from test_registration import call


def test_campaign_publish_beacon_and_report(stack):
    node, sns, emulator, demo = stack
    apps = applications(sns, emulator, demo)
    key = subprocess.run([CLARION, "accounts", "create-api-key", "--data-dir", node.data_dir],
                         capture_output=True, text=True, timeout=60)
    bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
    token = "fcm-campaign-device-" + str(time.time_ns())
    endpoint = sns.create_platform_endpoint(PlatformApplicationArn=apps["GCM"], Token=token)["EndpointArn"]
    ios_token = "%064x" % time.time_ns()
    ios = sns.create_platform_endpoint(PlatformApplicationArn=apps["APNS"], Token=ios_token)["EndpointArn"]

    bad_status, bad = call(node.url + "/v1/publish", "POST", {
        "targets": [{"endpoint": endpoint}], "message": "hi",
        "campaign": {"name": "Spring", "namespace": "acme", "data": {"discount": 10}}}, bearer)
    assert bad_status == 400 and bad["error"]["field"] == "campaign.data.discount"

    status, accepted = call(node.url + "/v1/publish", "POST", {
        "targets": [{"endpoint": endpoint}, {"endpoint": ios}],
        "message": {"default": "Spring sale", "GCM": {"fcmV1Message": {"message": {"notification": {"title": "Sale", "body": "Spring sale"}}}}},
        "campaign": {"id": "spring-" + str(time.time_ns()), "name": "Spring", "namespace": "acme",
                     "deep_link": "acme://sale", "data": {"discount": "10"}}}, bearer)
    assert status == 202, accepted
    campaign = accepted["campaign"]

    def delivered():
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        mine = {r["token"]: r for r in records if r.get("token") in (token, ios_token) and r.get("status") == 200}
        return mine if len(mine) == 2 else None

    records = wait_for(delivered, what="both campaign pushes at the emulator")
    fcm_message = json.loads(records[token]["payload"])["message"]
    namespace = json.loads(fcm_message["data"]["acme"])           # FCM: a JSON-encoded string in data["acme"]
    assert namespace["type"] == "campaign" and namespace["deep_link"] == "acme://sale" and namespace["discount"] == "10"
    assert fcm_message["notification"]["body"] == "Spring sale"    # title/body stay in the platform's fields
    apns_payload = json.loads(records[ios_token]["payload"])
    assert apns_payload["acme"]["type"] == "campaign" and "aps" in apns_payload   # APNs: beside aps

    beacon = node.url + "/v1/beacons/open"
    assert call(beacon, "POST", {"delivery_id": namespace["delivery_id"]})[0] == 204
    assert call(beacon, "POST", {"delivery_id": namespace["delivery_id"]})[0] == 204   # idempotent
    forged = namespace["delivery_id"][:-2] + ("AA" if not namespace["delivery_id"].endswith("AA") else "BB")
    assert call(beacon, "POST", {"delivery_id": forged})[0] == 400

    def reported():
        s, report = call(node.url + f"/v1/campaigns/{campaign}/report", "GET", None, bearer)
        assert s == 200, report
        return report if report["deliveries"]["accepted"] == 2 else None

    report = wait_for(reported, what="the campaign report")
    assert report["opens"]["unique"] == 1 and abs(report["opens"]["rate"] - 0.5) < 1e-9
