"""Issue 18, end to end: endpoint time zones, `send_at_local` planned per zone, and a mobile app's frequency cap.

One `clarion serve` on PostgreSQL and a standalone emulator. Endpoints get their IANA zone through the native API
(`time_zone`); a bad zone is a 400 naming the field. A campaign publish with `send_at_local` one minute ahead in UTC
(the fallback zone) stores one scheduled message per distinct zone among the topic's endpoints (Tokyo, Los Angeles
and UTC for the endpoints without a zone), each due at that zone's next local time; the UTC unit is released when
due and reaches only the endpoints without a zone (the emulator's own records). The mobile app's cap (1 per hour)
then caps the next campaign push for those endpoints (`capped` in GET /v1/messages/{id} and the campaign report),
while a transactional publish is exempt. Quiet hours covering every endpoint's local time skip a campaign that says
`skip` (`quiet_skipped`) and defer one by default (`deferred`, retries due at their end), while a transactional
publish is sent. Direct campaign pushes (an endpoint target) are capped, skipped and deferred the same way, and a
transactional user publish that opts in to quiet hours is skipped. A user target's devices are scheduled each at its
own zone's local time (an endpoint target likewise), and an audience publish with `send_at_local` is planned per
zone. The other units, hours ahead, are cancelled at the end."""
import json
import os
import shutil
import subprocess
import tempfile
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import boto3
from botocore.config import Config

from conftest import CLARION, Emulator, Node, call, fresh_database, h2_get, wait_for

KEY = "AKIACLARIONE2ELOCAL1"
SECRET = "e2e-local-time-secret-0123456789abcdefg"
MASTER_KEY = "bG9jYWwtdGltZS1jYXAtcXVpZXQtZTJlLWtleTAwMDA="
ZONES = {"tokyo": ("Asia/Tokyo", 3), "la": ("America/Los_Angeles", 2), "none": (None, 2)}


def next_local(hhmm, zone, after):
    """The documented rule (docs/api.md): the first instant strictly after `after` whose wall clock reads hh:mm."""
    local = after.astimezone(ZoneInfo(zone))
    hour, minute = map(int, hhmm.split(":"))
    candidate = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate <= local:
        candidate = (local + timedelta(days=1)).replace(hour=hour, minute=minute, second=0, microsecond=0)
    return candidate.astimezone(timezone.utc)


def test_time_zones_local_send_and_frequency_cap():
    with Emulator("local") as emulator:
        database = fresh_database()
        data = tempfile.mkdtemp(prefix="clarion-e2e-local-node-")
        env = {"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, "CLARION_MASTER_KEY": MASTER_KEY}
        node = Node(["--database-url", database, "--data-dir", data], env=env)
        try:
            node.wait_ready()
            sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                               aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
            key = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database],
                                 capture_output=True, text=True, timeout=60, env={**os.environ, **env})
            assert key.returncode == 0, key.stderr
            bearer = {"Authorization": "Bearer " + key.stdout.split("key: ")[1].strip()}
            sns.create_platform_application(Name="local-android", Platform="GCM", Attributes={
                "PlatformCredential": open(os.path.join(emulator.demo, "fcm-service-account.json")).read(),
                "ProviderEndpoint": emulator.url})
            topic = sns.create_topic(Name="local")["TopicArn"]

            # The mobile app with a cap of 1 campaign push per endpoint per hour; bad settings name their field.
            status, app = call(node.url + "/v1/mobile-apps", "POST", {
                "name": "local", "fcm_application": "GCM:local-android",
                "frequency_cap": {"max": 1, "window_seconds": 3600}}, bearer)
            assert status == 201, app
            assert app["frequency_cap"] == {"max": 1, "window_seconds": 3600} and app["quiet_hours"] is None, app
            for body, field in [({"quiet_hours": {"start": "22:00", "end": "22:00"}}, "quiet_hours"),
                                ({"quiet_hours": {"start": "22:00", "end": "08:00", "time_zone": "Mars/Base"}},
                                 "quiet_hours.time_zone"),
                                ({"frequency_cap": {"max": 0, "window_seconds": 3600}}, "frequency_cap")]:
                status, answer = call(node.url + f"/v1/mobile-apps/{app['id']}", "PATCH", body, bearer)
                assert status == 400 and answer["error"]["field"] == field, (body, answer)
            status, patched = call(node.url + f"/v1/mobile-apps/{app['id']}", "PATCH",
                                   {"quiet_hours": {"start": "23:58", "end": "23:59", "time_zone": "Pacific/Kiritimati"}},
                                   bearer)
            assert status == 200 and patched["quiet_hours"] == {
                "start": "23:58", "end": "23:59", "time_zone": "Pacific/Kiritimati"}, patched
            status, patched = call(node.url + f"/v1/mobile-apps/{app['id']}", "PATCH", {"quiet_hours": None}, bearer)
            assert status == 200 and patched["quiet_hours"] is None, patched

            # Endpoints with their zones through the native API; a zone Foundation does not know is refused.
            endpoints = node.url + "/v1/applications/GCM:local-android/endpoints"
            status, answer = call(endpoints, "POST", {"token": "fcm-local-bad", "time_zone": "Europe/Atlantis"}, bearer)
            assert status == 400 and answer["error"]["field"] == "time_zone", answer
            created = []
            for prefix, (zone, count) in ZONES.items():
                for n in range(count):
                    body = {"token": f"fcm-local-{prefix}-{n}"}
                    if zone:
                        body["time_zone"] = zone
                    status, endpoint = call(endpoints, "POST", body, bearer)
                    assert status == 201 and endpoint["time_zone"] == zone, endpoint
                    created.append(endpoint)
                    sub = call(node.url + f"/v1/topics/{topic}/subscriptions", "POST", {"endpoint": endpoint["id"]}, bearer)
                    assert sub[0] == 201, sub
            # PATCH changes it, GET shows it; SNS's Get/SetEndpointAttributes know it as TimeZone (a bad one is SNS's
            # InvalidParameter).
            first = created[0]
            status, moved = call(node.url + f"/v1/endpoints/{first['id']}", "PATCH", {"time_zone": "UTC"}, bearer)
            assert status == 200 and moved["time_zone"] == "UTC", moved
            assert sns.get_endpoint_attributes(EndpointArn=first["arn"])["Attributes"]["TimeZone"] == "UTC"
            try:
                sns.set_endpoint_attributes(EndpointArn=first["arn"], Attributes={"TimeZone": "Moon/Base"})
                raise AssertionError("a bad TimeZone was accepted")
            except sns.exceptions.InvalidParameterException:
                pass
            sns.set_endpoint_attributes(EndpointArn=first["arn"], Attributes={"TimeZone": "Asia/Tokyo"})
            status, back = call(node.url + f"/v1/endpoints/{first['id']}", "GET", headers=bearer)
            assert status == 200 and back["time_zone"] == "Asia/Tokyo", back

            publish = node.url + "/v1/publish"
            camp = {"id": "local-e2e", "name": "Local", "namespace": "acme"}
            for body, field in [({"send_at_local": "9:00"}, "send_at_local"),
                                ({"send_at_local": "09:00", "fallback_time_zone": "CET+1"}, "fallback_time_zone"),
                                ({"quiet_hours": "sometimes"}, "quiet_hours"),
                                ({"send_at_local": "09:00", "send_at": "2030-01-01T00:00:00Z"}, "send_at_local")]:
                status, answer = call(publish, "POST", {"targets": [{"topic": topic}], "message": "x", **body}, bearer)
                assert status == 400 and answer["error"]["field"] == field, (body, answer)

            # One unit per zone: Asia/Tokyo (3 endpoints), America/Los_Angeles (2), and UTC, the
            # fallback of the endpoints without a zone. UTC's local time is the next minute.
            now = datetime.now(timezone.utc)
            if now.second > 50:  # keep the minute boundary away from the publish
                wait_for(lambda: datetime.now(timezone.utc).second < 5, timeout=15, what="the next minute")
                now = datetime.now(timezone.utc)
            local = (now + timedelta(minutes=1)).strftime("%H:%M")
            status, answer = call(publish, "POST", {
                "targets": [{"topic": topic}], "campaign": camp, "send_at_local": local, "fallback_time_zone": "UTC",
                "message": {"default": "good morning",
                            "GCM": {"fcmV1Message": {"message": {"notification": {"title": "Hi", "body": "good morning"}}}}},
            }, bearer)
            assert status == 202, answer
            units = {m["time_zone"]: m for m in answer["messages"]}
            assert sorted(units) == ["America/Los_Angeles", "Asia/Tokyo", "UTC"], answer
            assert all(m["state"] == "Scheduled" for m in units.values()), answer
            for zone, unit in units.items():
                due = datetime.fromisoformat(unit["send_at"].replace("Z", "+00:00"))
                expected = next_local(local, zone, now)
                assert abs((due - expected).total_seconds()) < 1, (zone, unit, expected)

            def state(message):
                code, s = call(node.url + f"/v1/messages/{message}", "GET", headers=bearer)
                assert code == 200, s
                return s

            utc = units["UTC"]["id"]
            assert state(utc)["state"] == "Scheduled"
            wait_for(lambda: state(utc)["state"] == "Completed", timeout=120, what="the UTC unit to be released")
            done = state(utc)
            assert done["deliveries"]["accepted"] == 2 and done["deliveries"]["targeted"] == 2, done
            records = [json.loads(line) for line in h2_get(emulator.url + "/_emulator/records").splitlines() if line.strip()]
            records = [r for r in records if r.get("token", "").startswith("fcm-local-")]
            assert sorted(r["token"] for r in records) == ["fcm-local-none-0", "fcm-local-none-1"], records
            for zone in ["Asia/Tokyo", "America/Los_Angeles"]:
                assert state(units[zone]["id"])["state"] == "Scheduled"

            # The cap (1 per hour): the next campaign push is capped for the two endpoints that just got one.
            status, answer = call(publish, "POST", {"targets": [{"topic": topic}], "campaign": camp,
                                                    "message": "second"}, bearer)
            assert status == 202, answer
            second = answer["messages"][0]["id"]
            wait_for(lambda: state(second)["state"] == "Completed", timeout=60, what="the second campaign push")
            counts = state(second)["deliveries"]
            assert counts["capped"] == 2 and counts["accepted"] == 5 and counts["targeted"] == 7, counts
            # A transactional publish is exempt.
            status, answer = call(publish, "POST", {"targets": [{"topic": topic}], "message": "receipt"}, bearer)
            third = answer["messages"][0]["id"]
            wait_for(lambda: state(third)["state"] == "Completed", timeout=60, what="the transactional publish")
            assert state(third)["deliveries"]["accepted"] == 7 and state(third)["deliveries"]["capped"] == 0
            # A direct campaign push (an endpoint target, sent by the direct batch worker) is capped by the same cap:
            # fcm-local-none-1 had its one push this hour from the UTC unit. A transactional one to it is exempt.
            none_1 = created[-1]  # fcm-local-none-1 (ZONES order)
            status, answer = call(publish, "POST", {"targets": [{"endpoint": none_1["id"]}], "campaign": camp,
                                                    "message": "direct campaign"}, bearer)
            assert status == 202, answer
            direct = answer["messages"][0]["id"]
            wait_for(lambda: state(direct)["state"] == "Completed", timeout=60, what="the direct campaign push")
            counts = state(direct)["deliveries"]
            assert counts["capped"] == 1 and counts["sent"] == 0 and counts["targeted"] == 1, counts
            status, answer = call(publish, "POST", {"targets": [{"endpoint": none_1["id"]}], "message": "direct receipt"},
                                  bearer)
            direct_receipt = answer["messages"][0]["id"]
            wait_for(lambda: state(direct_receipt)["state"] == "Completed", timeout=60, what="the direct transactional push")
            assert state(direct_receipt)["deliveries"]["accepted"] == 1, state(direct_receipt)
            code, report = call(node.url + "/v1/campaigns/local-e2e/report", "GET", headers=bearer)
            assert code == 200 and report["deliveries"]["capped"] == 3, report

            # Quiet hours 00:00-23:59 in each endpoint's own zone (so every endpoint is in them, unless one of the
            # three zones reads 23:59 now: then wait a minute). No cap from here on.
            zones = ["Asia/Tokyo", "America/Los_Angeles", "UTC"]
            if any(datetime.now(ZoneInfo(z)).strftime("%H:%M") == "23:59" for z in zones):
                wait_for(lambda: all(datetime.now(ZoneInfo(z)).strftime("%H:%M") != "23:59" for z in zones),
                         timeout=70, what="the minute after 23:59")
            status, patched = call(node.url + f"/v1/mobile-apps/{app['id']}", "PATCH", {
                "frequency_cap": None, "quiet_hours": {"start": "00:00", "end": "23:59", "time_zone": "UTC"}}, bearer)
            assert status == 200 and patched["frequency_cap"] is None, patched
            # A campaign that skips quiet hours: nothing sent, all 7 counted quiet_skipped.
            status, answer = call(publish, "POST", {"targets": [{"topic": topic}], "campaign": camp,
                                                    "quiet_hours": "skip", "message": "quiet skip"}, bearer)
            assert status == 202, answer
            skip = answer["messages"][0]["id"]
            wait_for(lambda: state(skip)["state"] == "Completed", timeout=60, what="the quiet-hours skip")
            counts = state(skip)["deliveries"]
            assert counts["quiet_skipped"] == 7 and counts["sent"] == 0 and counts["targeted"] == 7, counts
            # A campaign's default defers: all 7 counted deferred, the message stays Processing with 7 retries due at
            # the end of the quiet hours (sent then: TimingFanOutTests); cancelled here.
            status, answer = call(publish, "POST", {"targets": [{"topic": topic}], "campaign": camp,
                                                    "message": "quiet defer"}, bearer)
            deferred = answer["messages"][0]["id"]
            wait_for(lambda: state(deferred)["deliveries"]["deferred"] == 7, timeout=60, what="the deferrals")
            held = state(deferred)
            assert held["state"] == "Processing" and held["deliveries"]["sent"] == 0 and held["pending_retries"] == 7, held
            # A transactional publish ignores quiet hours.
            status, answer = call(publish, "POST", {"targets": [{"topic": topic}], "message": "receipt 2"}, bearer)
            fourth = answer["messages"][0]["id"]
            wait_for(lambda: state(fourth)["state"] == "Completed", timeout=60, what="the second transactional publish")
            assert state(fourth)["deliveries"]["accepted"] == 7 and state(fourth)["deliveries"]["deferred"] == 0
            code, cancelled = call(node.url + f"/v1/messages/{deferred}/cancel", "POST", headers=bearer)
            assert code == 200 and cancelled["state"] == "Cancelled", cancelled
            # The same for a direct campaign push: `skip` counts quiet_skipped, the default defers it (cancelled here).
            status, answer = call(publish, "POST", {"targets": [{"endpoint": none_1["id"]}], "campaign": camp,
                                                    "quiet_hours": "skip", "message": "quiet direct skip"}, bearer)
            direct_skip = answer["messages"][0]["id"]
            wait_for(lambda: state(direct_skip)["state"] == "Completed", timeout=60, what="the direct quiet-hours skip")
            counts = state(direct_skip)["deliveries"]
            assert counts["quiet_skipped"] == 1 and counts["sent"] == 0, counts
            status, answer = call(publish, "POST", {"targets": [{"endpoint": none_1["id"]}], "campaign": camp,
                                                    "message": "quiet direct defer"}, bearer)
            direct_defer = answer["messages"][0]["id"]
            wait_for(lambda: state(direct_defer)["deliveries"]["deferred"] == 1, timeout=60, what="the direct deferral")
            held = state(direct_defer)
            assert held["state"] == "Processing" and held["deliveries"]["sent"] == 0 and held["pending_retries"] == 1, held
            code, cancelled = call(node.url + f"/v1/messages/{direct_defer}/cancel", "POST", headers=bearer)
            assert code == 200 and cancelled["state"] == "Cancelled", cancelled
            sent = [json.loads(line) for line in h2_get(emulator.url + "/_emulator/records").splitlines() if line.strip()]
            assert not [r for r in sent if "quiet" in r.get("payload", "")], "a quiet-hours push reached the provider"

            # A user target: each of the user's devices is one message, scheduled at its own device's local time.
            for n, zone in enumerate(["Asia/Tokyo", None]):
                body = {"token": f"fcm-local-alice-{n}", "user_id": "alice"}
                if zone:
                    body["time_zone"] = zone
                assert call(endpoints, "POST", body, bearer)[0] == 201
            now = datetime.now(timezone.utc)
            status, answer = call(publish, "POST", {
                "targets": [{"user": {"app": "GCM:local-android", "user_id": "alice"}}], "message": "hi alice",
                "send_at_local": "07:30", "fallback_time_zone": "America/Los_Angeles"}, bearer)
            assert status == 202 and len(answer["messages"]) == 2, answer
            alice = [m["id"] for m in answer["messages"]]
            assert sorted(m["time_zone"] for m in answer["messages"]) == ["America/Los_Angeles", "Asia/Tokyo"], answer
            for m in answer["messages"]:
                due = datetime.fromisoformat(m["send_at"].replace("Z", "+00:00"))
                assert m["state"] == "Scheduled" and abs((due - next_local("07:30", m["time_zone"], now)).total_seconds()) < 2, m
                assert state(m["id"])["state"] == "Scheduled"
            # An endpoint target is one message, due at 07:30 in the endpoint's own zone (read at publish).
            code, current = call(node.url + f"/v1/endpoints/{first['id']}", "GET", headers=bearer)
            assert code == 200 and current.get("time_zone"), current
            now = datetime.now(timezone.utc)
            status, answer = call(publish, "POST", {"targets": [{"endpoint": first["id"]}], "message": "x",
                                                    "send_at_local": "07:30", "fallback_time_zone": "America/Los_Angeles"},
                                  bearer)
            assert status == 202 and len(answer["messages"]) == 1, answer
            single = answer["messages"][0]
            due = datetime.fromisoformat(single["send_at"].replace("Z", "+00:00"))
            assert single["time_zone"] == current["time_zone"] and single["state"] == "Scheduled", single
            assert abs((due - next_local("07:30", current["time_zone"], now)).total_seconds()) < 2, single
            assert state(single["id"])["state"] == "Scheduled"
            # A transactional publish to a user that opts in to quiet hours (still 00:00-23:59): each device's push is
            # counted quiet_skipped, none sent.
            status, answer = call(publish, "POST", {"targets": [{"user": {"app": "GCM:local-android", "user_id": "alice"}}],
                                                    "quiet_hours": "skip", "message": "quiet opt-in"}, bearer)
            assert status == 202 and len(answer["messages"]) == 2, answer
            for m in answer["messages"]:
                wait_for(lambda: state(m["id"])["state"] == "Completed", timeout=60, what="the opted-in user push")
                assert state(m["id"])["deliveries"]["quiet_skipped"] == 1, state(m["id"])
            sent = [json.loads(line) for line in h2_get(emulator.url + "/_emulator/records").splitlines() if line.strip()]
            assert not [r for r in sent if "quiet" in r.get("payload", "")], "a quiet-hours push reached the provider"

            # An audience publish with send_at_local: one scheduled message per zone of the app's devices (UTC for
            # those without one), each due at that zone's next 07:30; `send_at` with it is refused.
            audience = node.url + "/v1/publish/audience"
            status, answer = call(audience, "POST", {"app": app["id"], "message": "x", "send_at_local": "07:30",
                                                     "send_at": "2030-01-01T00:00:00Z"}, bearer)
            assert status == 400 and answer["error"]["field"] == "send_at_local", answer
            now = datetime.now(timezone.utc)
            status, answer = call(audience, "POST", {"app": app["id"], "message": "audience morning",
                                                     "send_at_local": "07:30", "fallback_time_zone": "UTC"}, bearer)
            assert status == 202, answer
            assert sorted(m["time_zone"] for m in answer["messages"]) == ["America/Los_Angeles", "Asia/Tokyo", "UTC"], answer
            for m in answer["messages"]:
                due = datetime.fromisoformat(m["send_at"].replace("Z", "+00:00"))
                assert m["state"] == "Scheduled" and abs((due - next_local("07:30", m["time_zone"], now)).total_seconds()) < 2, m
                assert state(m["message_id"])["state"] == "Scheduled"
            alice += [m["message_id"] for m in answer["messages"]]

            for message in [units[z]["id"] for z in ["Asia/Tokyo", "America/Los_Angeles"]] + alice:
                code, cancelled = call(node.url + f"/v1/messages/{message}/cancel", "POST", headers=bearer)
                assert code == 200 and cancelled["state"] == "Cancelled", cancelled
        finally:
            node.stop()
            shutil.rmtree(data, ignore_errors=True)
