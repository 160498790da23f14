"""A provider storm during a topic fan-out (issue 22's fault test), shared by the CI test
(Tests/e2e/test_provider_storm.py, 20,000 endpoints) and the 1M run (loadtest/storm/run.sh).

The scenario: `clarion emulator` (h2c, demo credentials, every request recorded to a JSON-lines file) with the storm's
faults, a release `clarion serve` on a given PostgreSQL, an APNs and an FCM platform application pointed at the
emulator (through the SNS API), N endpoints (half APNs, half FCM) subscribed to one topic (seeded with one
INSERT ... SELECT each, no API round trip per endpoint), one Publish to the topic, a wait until the message is final,
then the checks, made from the emulator's own records and the database, never from Clarion's claims:

- no endpoint lost: every endpoint's token got a 200 from the emulator, and the message is Completed with every
  target accepted;
- duplicates (a token answered 200 more than once) within the bound docs/architecture.md documents ("Delivery
  guarantees under provider faults"): a push is sent again only when the gateway has no answer for it, and a stream
  that is refused (REFUSED_STREAM, or above a GOAWAY's last-stream-id) was not processed (RFC 9113 §8.7), so with
  these faults, where every stream is answered (the stall holds answers for 2 s, far below the 30 s request
  timeout) or refused, the bound is 0;
- Retry-After honoured: FCM answers 429 QUOTA_EXCEEDED and 503 UNAVAILABLE with `Retry-After` (providers.md B.4:
  "retry ... honouring Retry-After"); the next request for that token must reach the emulator no earlier than the
  answer went out plus Retry-After. APNs sends no Retry-After with 429 TooManyRequests or 503 ServiceUnavailable
  (A.6: "TooManyRequests can be retried after a delay", 5xx "retry with backoff"): the next request must come after
  RetryPolicy's smallest backoff (1 s base with up to half of it taken by jitter: 0.5 s).

Faults (EmulatorFaults, seeded so every run draws the same pattern): 10% 503, 5% 429 with Retry-After, a GOAWAY on
each connection after every `goaway_after` streams (5,000 in the 1M run), and one stall window: from send request
`stall_at` on, every answer is held until `stall_ms` after that request arrived.
"""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

# RetryPolicy.standard: the first retry's backoff is 1 s minus up to half of it (jitter 0.5).
MIN_BACKOFF_SECONDS = 0.5
# Clock readings on both sides are taken around the events they stand for; allow a millisecond of rounding.
SLACK_SECONDS = 0.001


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(url, sql, *args):
    """Runs SQL with psql and returns its unaligned, tab-separated output."""
    r = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAtX", "-F", "\t", "-c", sql, *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"psql failed: {r.stderr.strip()}\n{sql}")
    return r.stdout


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def h2_get(url):
    """The emulator speaks HTTP/2 only (h2c); curl talks to it with prior knowledge."""
    r = subprocess.run(["curl", "-s", "--http2-prior-knowledge", url], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"curl {url}: {r.stderr}")
    return r.stdout


class Storm:
    """Runs the scenario once. `run()` returns the figures; `violations(figures)` lists broken promises."""

    def __init__(self, clarion, database_url, endpoints, workdir=None, goaway_after=5000, stall_at=None,
                 stall_ms=2000, retry_after=3, unavailable=0.10, throttle=0.05, seed=22, log=print,
                 access_key="AKIACLARIONSTORM0001", secret_key="storm-secret-0123456789abcdefghijklmn"):
        self.clarion = clarion
        self.database_url = database_url
        self.endpoints = endpoints
        self.workdir = workdir or tempfile.mkdtemp(prefix="clarion-storm-")
        self.goaway_after = goaway_after
        # Mid fan-out by default: after about 30% of the first attempts.
        self.stall_at = stall_at or max(1, endpoints * 3 // 10)
        self.stall_ms = stall_ms
        self.retry_after = retry_after
        self.unavailable = unavailable
        self.throttle = throttle
        self.seed = seed
        self.log = log
        self.access_key = access_key
        self.secret_key = secret_key
        self.records_path = os.path.join(self.workdir, "emulator-records.jsonl")
        self.emulator = None
        self.node = None

    # -- processes -------------------------------------------------------------------------------------------------

    def faults(self):
        return [f"unavailable={self.unavailable}", f"throttle={self.throttle}", f"retry-after={self.retry_after}",
                f"goaway-after={self.goaway_after}", f"stall-window={self.stall_at}:{self.stall_ms}",
                f"seed={self.seed}"]

    def start_emulator(self):
        port = free_port()
        self.emulator_url = f"http://127.0.0.1:{port}"
        self.demo = os.path.join(self.workdir, "demo")
        args = [self.clarion, "emulator", "--listen", f"127.0.0.1:{port}", "--write-demo-credentials", self.demo,
                "--record", self.records_path]
        for fault in self.faults():
            args += ["--fault", fault]
        self.emulator_log = open(os.path.join(self.workdir, "emulator.log"), "w")
        self.emulator = subprocess.Popen(args, stdout=self.emulator_log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.emulator.poll() is not None:
                raise RuntimeError(f"emulator exited {self.emulator.returncode}: {self.read('emulator.log')}")
            try:
                if h2_get(self.emulator_url + "/_emulator/health").strip() == "ok":
                    return
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
            time.sleep(0.2)
        raise RuntimeError("emulator did not come up: " + self.read("emulator.log"))

    def start_node(self):
        port = free_port()
        self.node_url = f"http://127.0.0.1:{port}"
        env = dict(os.environ)
        env.update({
            "CLARION_DATABASE_URL": self.database_url,
            "CLARION_MASTER_KEY": subprocess.run(["openssl", "rand", "-base64", "32"], capture_output=True,
                                                 text=True, check=True).stdout.strip(),
            "CLARION_ACCESS_KEY_ID": self.access_key,
            "CLARION_SECRET_ACCESS_KEY": self.secret_key,
            "CLARION_PROVIDER_ALLOW_HOSTS": "127.0.0.0/8",
        })
        self.node_log = open(os.path.join(self.workdir, "node.log"), "w")
        self.node = subprocess.Popen([self.clarion, "serve", "--listen", f"127.0.0.1:{port}"], env=env,
                                     stdout=self.node_log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.node.poll() is not None:
                raise RuntimeError(f"clarion exited {self.node.returncode}: {self.read('node.log')}")
            try:
                if http_get(self.node_url + "/ready", timeout=2)[0] == 200:
                    return
            except (OSError, urllib.error.HTTPError):
                pass
            time.sleep(0.2)
        raise RuntimeError("node not ready: " + self.read("node.log"))

    def stop(self, process, timeout=60):
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return None if process is None else process.returncode

    def close(self):
        self.stop(self.node)
        self.stop(self.emulator)

    def read(self, name):
        try:
            with open(os.path.join(self.workdir, name)) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    # -- the scenario ----------------------------------------------------------------------------------------------

    def setup(self):
        import boto3
        from botocore.config import Config
        self.sns = boto3.client("sns", endpoint_url=self.node_url, region_name="us-east-1",
                                aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
                                config=Config(retries={"max_attempts": 1}, read_timeout=120))
        apns = json.load(open(os.path.join(self.demo, "apns.json")))
        fcm_json = open(os.path.join(self.demo, "fcm-service-account.json")).read()
        p8 = open(os.path.join(self.demo, apns["keyFile"])).read()
        ios = self.sns.create_platform_application(Name="storm-ios", Platform="APNS", Attributes={
            "PlatformCredential": p8, "PlatformPrincipal": apns["keyID"], "ApplePlatformTeamID": apns["teamID"],
            "ApplePlatformBundleID": apns["bundleID"], "ProviderEndpoint": self.emulator_url})["PlatformApplicationArn"]
        android = self.sns.create_platform_application(Name="storm-android", Platform="GCM", Attributes={
            "PlatformCredential": fcm_json, "ProviderEndpoint": self.emulator_url})["PlatformApplicationArn"]
        self.topic_arn = self.sns.create_topic(Name="storm")["TopicArn"]
        ids = dict(line.split("\t") for line in psql(self.database_url, """
            SELECT name, id FROM platform_applications WHERE name IN ('storm-ios', 'storm-android')""").split("\n") if line)
        topic = psql(self.database_url, "SELECT id FROM topics WHERE name = 'storm'").strip()
        assert ios and android and topic
        started = time.time()
        # APNs tokens: 64 hex digits (A.8); FCM tokens: any text. Even i -> APNs, odd i -> FCM.
        psql(self.database_url, f"""
            INSERT INTO endpoints (external_id, application, token)
            SELECT gen_random_uuid(),
                   CASE WHEN i % 2 = 0 THEN {ids['storm-ios']} ELSE {ids['storm-android']} END,
                   CASE WHEN i % 2 = 0 THEN lpad(to_hex(i), 16, '0') || repeat('a', 48) ELSE 'storm-fcm-' || i END
            FROM generate_series(0, {self.endpoints - 1}) AS i;
            INSERT INTO subscriptions (external_id, topic, protocol, endpoint)
            SELECT gen_random_uuid(), {topic}, 'application', id FROM endpoints
            WHERE application IN ({ids['storm-ios']}, {ids['storm-android']}) ORDER BY id;
            ANALYZE endpoints; ANALYZE subscriptions;""")
        self.seed_seconds = time.time() - started
        self.log(f"seeded {self.endpoints} endpoints + subscriptions in {self.seed_seconds:.1f} s")

    def publish_and_wait(self, timeout):
        h2_get(self.emulator_url + "/_emulator/stats")
        message = json.dumps({"default": "storm", "APNS": json.dumps({"aps": {"alert": "storm"}}),
                              "GCM": json.dumps({"notification": {"title": "storm"}})})
        started = time.time()
        self.message_id = self.sns.publish(TopicArn=self.topic_arn, Message=message, MessageStructure="json")["MessageId"]
        last = 0
        while True:
            row = psql(self.database_url, f"""
                SELECT m.state, coalesce(sum(s.accepted), 0), coalesce(sum(s.failed), 0), coalesce(sum(s.retried), 0),
                       (SELECT count(*) FROM delivery_retries r WHERE r.message = m.id)
                FROM messages m LEFT JOIN fanout_shards s ON s.message = m.id
                WHERE m.external_id = '{self.message_id}' GROUP BY m.id, m.state""").strip()
            state = row.split("\t")[0] if row else "unknown"
            if state in ("Completed", "Failed", "Expired"):
                break
            if time.time() - started > timeout:
                raise RuntimeError(f"message not final after {timeout} s: {row}")
            if time.time() - last >= 5:
                last = time.time()
                self.log(f"  {last - started:6.1f} s  state, accepted, failed, retried, pending retries: {row}")
            time.sleep(0.1)
        # The final state is written under the message row's lock in the same transaction as the last counters.
        wall = psql(self.database_url, f"""
            SELECT extract(epoch FROM completed_at - published_at) FROM messages WHERE external_id = '{self.message_id}'
            """).strip()
        self.wall_seconds = float(wall) if wall else time.time() - started
        self.final_row = row
        self.log(f"message {self.message_id} {state} after {self.wall_seconds:.2f} s: {row}")

    def run(self, timeout=1800):
        try:
            self.start_emulator()
            self.start_node()
            self.setup()
            self.publish_and_wait(timeout)
            stats = json.loads(h2_get(self.emulator_url + "/_emulator/stats"))
        finally:
            node_exit = self.stop(self.node)
            self.stop(self.emulator)  # SIGTERM flushes the record file
        figures = self.analyse(stats)
        figures["node_exit"] = node_exit
        # The node logs every failure (a shard worker that failed, a checkpoint that could not be written) at error
        # level; a storm the gateway is built for must not produce one.
        with open(os.path.join(self.workdir, "node.log")) as f:
            errors = [line for line in f if '"level":"error"' in line]
        figures["node_errors"] = len(errors)
        figures["node_error_sample"] = [line.strip()[:300] for line in errors[:3]]
        return figures

    # -- the checks ------------------------------------------------------------------------------------------------

    def analyse(self, stats):
        state, accepted, failed, retried, pending = self.final_row.split("\t")
        tokens = {}
        for line in psql(self.database_url, """
                SELECT e.token, a.platform FROM endpoints e JOIN platform_applications a ON a.id = e.application
                WHERE a.name IN ('storm-ios', 'storm-android')""").split("\n"):
            if line:
                token, platform = line.split("\t")
                tokens[token] = platform
        with open(self.records_path) as f:
            figures = analyse_records(f, tokens, self.retry_after)
        figures.update({
            "endpoints": self.endpoints, "seed_seconds": round(self.seed_seconds, 1),
            "faults": self.faults(), "message_state": state, "accepted": int(accepted), "failed": int(failed),
            "retried": int(retried), "pending_retries": int(pending),
            "wall_seconds": round(self.wall_seconds, 2),
            "deliveries_per_second": round(self.endpoints / self.wall_seconds),
            "held_by_stall_stats": stats.get("heldByStallWindow"),
        })
        return figures

    @staticmethod
    def violations(f):
        """The promises the run must keep, each a sentence naming the rule; empty when all hold."""
        v = []
        if f["message_state"] != "Completed" or f["accepted"] != f["endpoints"] or f["failed"] != 0:
            v.append(f"the message must complete with every target accepted: {f['message_state']}, accepted "
                     f"{f['accepted']} of {f['endpoints']}, failed {f['failed']}")
        if f["lost"]:
            v.append(f"no endpoint is lost: {f['lost']} tokens never got a 200 from the emulator, e.g. {f['lost_sample']}")
        if f["unknown_tokens"]:
            v.append(f"{f['unknown_tokens']} requests named tokens that are not endpoints of this run")
        if f["last_answer_not_200"]:
            v.append(f"{f['last_answer_not_200']} tokens' last answer was not a 200 (given up after a fault)")
        if f["duplicates"] > f["duplicate_bound"]:
            v.append(f"duplicates within the documented bound ({f['duplicate_bound']} with every stream answered or "
                     f"refused): {f['duplicates']} extra 200s on {f['duplicate_tokens']} tokens")
        if f["fcm_retry_after_early"]:
            v.append(f"FCM 429 QUOTA_EXCEEDED / 503 UNAVAILABLE with Retry-After {f['retry_after_seconds']} s (B.4): "
                     f"{f['fcm_retry_after_early']} retries came earlier; gaps {f['fcm_retry_after_gaps']}")
        if f["apns_backoff_early"]:
            v.append(f"APNs 429 TooManyRequests / 503 (A.6, retry after a delay): {f['apns_backoff_early']} retries "
                     f"came before the {MIN_BACKOFF_SECONDS} s minimum backoff; gaps {f['apns_backoff_gaps']}")
        if f.get("node_errors"):
            v.append(f"the node logged {f['node_errors']} errors, e.g. {f['node_error_sample']}")
        # The faults must actually have happened, or the run proves nothing.
        for name, key in (("503", "answers_503"), ("429", "answers_429"), ("GOAWAY", "goaway_refused_streams"),
                          ("stall", "held_by_stall")):
            if not f[key]:
                v.append(f"the storm injected no {name}")
        if not f["fcm_retry_after_gaps"] or not f["apns_backoff_gaps"]:
            v.append("no retry after a 429/503 was seen on one of the providers")
        return v


def analyse_records(lines, tokens, retry_after):
    """The emulator's record lines (JSON) against the endpoints' tokens: what each token got, and the gaps before
    each retry that followed a 429 or 503."""
    per_token = {}
    counts = {"records": 0, "200": 0, "503": 0, "429": 0, "goAway": 0, "held": 0, "other": 0}
    by_provider = {"apns": {}, "fcm": {}}
    for line in lines:
        r = json.loads(line)
        if r["endpoint"] not in ("apns", "fcm"):
            continue
        counts["records"] += 1
        status, fault = r["status"], r.get("fault")
        key = str(status) if status else (fault or "none")
        by_provider[r["endpoint"]][key] = by_provider[r["endpoint"]].get(key, 0) + 1
        if status in (200, 503, 429):
            counts[str(status)] += 1
        elif fault == "goAway":
            counts["goAway"] += 1
        else:
            counts["other"] += 1
        held = r.get("heldSeconds") or 0
        if held:
            counts["held"] += 1
        token = r.get("token")
        if token is None and r["endpoint"] == "apns":
            token = r["path"].rsplit("/", 1)[-1]  # a refused stream is recorded before it is parsed
        if token is None:
            m = re.search(r'"token"\s*:\s*"([^"]+)"', r.get("payload", ""))
            token = m.group(1) if m else None
        # (arrival, status, reason, fault, when the answer went out, provider)
        per_token.setdefault(token, []).append((r["time"], status, r.get("reason"), fault, r["time"] + held, r["endpoint"]))
    oks = {t: sum(1 for x in per_token.get(t, ()) if x[1] == 200) for t in tokens}
    lost = [t for t, n in oks.items() if n == 0]
    strangers = [t for t in per_token if t not in tokens]
    # Retry gaps: from the moment an answer other than 200 went out to the token's next request.
    gaps = {"fcm_retry_after": [], "apns_backoff": []}
    early = {"fcm_retry_after": 0, "apns_backoff": 0}
    for seen in per_token.values():
        seen.sort()
        for prev, nxt in zip(seen, seen[1:]):
            _, status, reason, _, answered, provider = prev
            if provider == "fcm" and status in (429, 503) and reason in ("QUOTA_EXCEEDED", "UNAVAILABLE"):
                gap = nxt[0] - answered
                gaps["fcm_retry_after"].append(gap)
                if gap + SLACK_SECONDS < retry_after:
                    early["fcm_retry_after"] += 1
            elif provider == "apns" and status in (429, 503):
                gap = nxt[0] - answered
                gaps["apns_backoff"].append(gap)
                if gap + SLACK_SECONDS < MIN_BACKOFF_SECONDS:
                    early["apns_backoff"] += 1

    def summary(values):
        if not values:
            return None
        values = sorted(values)
        return {"count": len(values), "min": round(values[0], 3), "p50": round(values[len(values) // 2], 3),
                "max": round(values[-1], 3)}

    return {
        "emulator_requests": counts["records"], "answers_200": counts["200"], "answers_503": counts["503"],
        "answers_429": counts["429"], "goaway_refused_streams": counts["goAway"], "other_answers": counts["other"],
        "held_by_stall": counts["held"], "by_provider": by_provider,
        "lost": len(lost), "lost_sample": lost[:5], "unknown_tokens": len(strangers),
        "duplicates": sum(max(0, n - 1) for n in oks.values()), "duplicate_tokens": sum(1 for n in oks.values() if n > 1),
        "duplicate_bound": 0,
        # A token whose last answer was not a 200 was given up after a fault (or never delivered).
        "last_answer_not_200": sum(1 for t in tokens if per_token.get(t) and per_token[t][-1][1] != 200),
        "fcm_retry_after_gaps": summary(gaps["fcm_retry_after"]), "fcm_retry_after_early": early["fcm_retry_after"],
        "apns_backoff_gaps": summary(gaps["apns_backoff"]), "apns_backoff_early": early["apns_backoff"],
        "retry_after_seconds": retry_after,
    }
