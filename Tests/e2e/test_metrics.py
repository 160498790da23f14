"""Issue 17 "Metrics" and issue 22 finding 3 end to end against the release binary: `GET /metrics` after a known
workload shows exact counter deltas (deliveries by outcome class per platform and application, pushes sent,
provider answers timed, API requests by route pattern and status class), the whole exposition parses with
prometheus_client's parser, no label carries a token or an endpoint id, and `CLARION_METRICS_LISTEN` moves the
route off the API port."""
import os
import re
import tempfile
import time

import boto3
import pytest
from botocore.config import Config
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, Node, fresh_database, free_port, http_get

KEY = "AKIACLARIONE2EMETRIC1"
SECRET = "e2e-metrics-secret-0123456789abcdefghij"
MASTER_KEY = {"CLARION_MASTER_KEY": "B" * 43 + "="}

# The families issue 17 lists; with the ones the dashboard reads (below), all must be in a running node's exposition.
FAMILIES = {
    "clarion_deliveries", "clarion_deliveries_sent", "clarion_delivery_retries", "clarion_provider_response_seconds",
    "clarion_message_completion_seconds", "clarion_message_first_delivery_seconds", "clarion_publish_batch_messages", "clarion_publish_commit_seconds",
    "clarion_api_requests", "clarion_api_request_duration_seconds", "clarion_api_connections_open",
    "clarion_api_connections_refused", "clarion_db_pool_connections_busy", "clarion_db_pool_connections_idle",
    "clarion_db_pool_queued", "clarion_db_pool_waits", "clarion_db_errors", "clarion_work_waiting", "clarion_work_oldest_seconds",
    "clarion_http2_connections_open", "clarion_http2_connections_connecting",
    "clarion_http2_connections_backing_off", "clarion_http2_streams_in_flight", "clarion_http2_goaways_received",
    "clarion_http2_connections_opened", "clarion_mobile_token_reassignments", "process_cpu_seconds",
    "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds", "clarion_build_info",
}


def dashboard_families():
    """The metric families deploy/grafana/clarion.json queries (sample names reduced to their family)."""
    text = open(os.path.join(ROOT, "deploy", "grafana", "clarion.json")).read()
    names = set(re.findall(r"\b((?:clarion|process)_[a-z0-9_]+)", text))
    return {re.sub(r"_(bucket|total|sum|count)$", "", name) for name in names}


def scrape(url):
    status, text = http_get(url + "/metrics")
    assert status == 200, text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    return text, families


def value(families, family, sample, **labels):
    """The value of one sample (0 when absent: a child not made yet has counted nothing)."""
    for s in families[family].samples if family in families else []:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()) and len(s.labels) == len(labels):
            return s.value
    return 0


@pytest.fixture(scope="module")
def stack():
    data = tempfile.mkdtemp(prefix="clarion-e2e-metrics-")
    node = Node(["--database-url", fresh_database(), "--data-dir", data, "--with-emulator"],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, **MASTER_KEY})
    node.wait_ready()
    output = node.output().replace("\\/", "/")
    match = re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', output) \
        or re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', output)
    assert match, output
    sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                       aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
    yield node, sns, match.group(1), data + "/demo"
    assert node.stop() == 0


def test_a_known_workload_moves_each_counter_by_exactly_its_share(stack):
    node, sns, emulator, demo = stack
    name = "metrics-android"
    app = sns.create_platform_application(Name=name, Platform="GCM", Attributes={
        "PlatformCredential": open(demo + "/fcm-service-account.json").read(),
        "ProviderEndpoint": emulator})["PlatformApplicationArn"]
    # Emulator rule: an FCM token starting "invalid-" is 400 INVALID_ARGUMENT, the provider's "token invalid".
    good = [f"metrics-token-{i:02d}-" + "x" * 40 for i in range(5)]
    bad = "invalid-metrics-token-" + "y" * 40
    endpoints = [sns.create_platform_endpoint(PlatformApplicationArn=app, Token=t)["EndpointArn"] for t in good + [bad]]

    before_text, before = scrape(node.url)
    for arn in endpoints:
        sns.publish(TargetArn=arn, Message="hello")
    labels = {"platform": "GCM", "application": name}

    def delta(family, sample, **extra):
        return value(after, family, sample, **labels, **extra) - value(before, family, sample, **labels, **extra)

    deadline = time.time() + 30
    while time.time() < deadline:
        _, after = scrape(node.url)
        if delta("clarion_deliveries", "clarion_deliveries_total", outcome="accepted") >= 5 \
                and delta("clarion_deliveries", "clarion_deliveries_total", outcome="token_invalid") >= 1:
            break
        time.sleep(0.2)
    time.sleep(1)  # anything counted twice would show by now
    after_text, after = scrape(node.url)

    assert delta("clarion_deliveries", "clarion_deliveries_total", outcome="accepted") == 5, after_text
    assert delta("clarion_deliveries", "clarion_deliveries_total", outcome="token_invalid") == 1, after_text
    for outcome in ("message_invalid", "credentials_invalid", "retryable", "rejected", "expired", "skipped_stale",
                    "skipped_disabled", "filtered", "capped", "quiet_skipped"):
        assert delta("clarion_deliveries", "clarion_deliveries_total", outcome=outcome) == 0, outcome
    assert delta("clarion_deliveries_sent", "clarion_deliveries_sent_total") == 6
    assert delta("clarion_delivery_retries", "clarion_delivery_retries_total") == 0
    # Each of the six pushes got one provider answer, timed.
    assert value(after, "clarion_provider_response_seconds", "clarion_provider_response_seconds_count", platform="GCM") \
        - value(before, "clarion_provider_response_seconds", "clarion_provider_response_seconds_count", platform="GCM") == 6
    # Six messages (direct publishes: target kind "endpoint") reached their final state, each observed once.
    completion = "clarion_message_completion_seconds"
    assert value(after, completion, completion + "_count", target_kind="endpoint") \
        - value(before, completion, completion + "_count", target_kind="endpoint") == 6
    assert value(after, completion, completion + "_count", target_kind="topic") \
        - value(before, completion, completion + "_count", target_kind="topic") == 0
    # Five of them had a delivery a provider accepted: each first delivery observed once; the refused one never.
    first = "clarion_message_first_delivery_seconds"
    assert value(after, first, first + "_count", target_kind="endpoint") \
        - value(before, first, first + "_count", target_kind="endpoint") == 5
    # Six SNS Publish calls, counted under the route pattern "/" (SNS's Query API), status class 2xx.
    api = {"method": "POST", "route": "/"}
    assert value(after, "clarion_api_requests", "clarion_api_requests_total", **api, status_class="2xx") \
        - value(before, "clarion_api_requests", "clarion_api_requests_total", **api, status_class="2xx") == 6
    assert value(after, "clarion_api_request_duration_seconds", "clarion_api_request_duration_seconds_count", **api) \
        - value(before, "clarion_api_request_duration_seconds", "clarion_api_request_duration_seconds_count", **api) == 6

    # The whole exposition parsed (scrape did it); every family the issue lists and the dashboard reads is there.
    assert FAMILIES <= set(after), sorted(FAMILIES - set(after))
    assert len(dashboard_families()) >= 20
    assert dashboard_families() <= set(after), sorted(dashboard_families() - set(after))
    # Six publishes went through the group commit: in at most six batches, and at least one.
    batches = value(after, "clarion_publish_batch_messages", "clarion_publish_batch_messages_count") \
        - value(before, "clarion_publish_batch_messages", "clarion_publish_batch_messages_count")
    assert value(after, "clarion_publish_batch_messages", "clarion_publish_batch_messages_sum") \
        - value(before, "clarion_publish_batch_messages", "clarion_publish_batch_messages_sum") == 6
    assert 1 <= batches <= 6
    assert value(after, "clarion_publish_commit_seconds", "clarion_publish_commit_seconds_count") \
        - value(before, "clarion_publish_commit_seconds", "clarion_publish_commit_seconds_count") == batches
    # Histogram buckets are cumulative and +Inf equals the count.
    for sample_family in ("clarion_provider_response_seconds", "clarion_api_request_duration_seconds", completion,
                          "clarion_publish_batch_messages", "clarion_publish_commit_seconds"):
        series = {}
        for s in after[sample_family].samples:
            if s.name.endswith("_bucket"):
                key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                series.setdefault(key, []).append((float(s.labels["le"]), s.value))
        for key, buckets in series.items():
            counts = [c for _, c in sorted(buckets)]
            assert counts == sorted(counts), (sample_family, key)
            assert counts[-1] == value(after, sample_family, sample_family + "_count", **dict(key))
    # Work waiting: every queue present, nothing left enqueued for this workload.
    queues = {s.labels["queue"]: s.value for s in after["clarion_work_waiting"].samples}
    assert set(queues) == {"messages_unplanned", "messages_in_progress", "shards_ready", "shards_leased", "retries_due",
                           "retries_scheduled", "registrations_pending", "webhooks_pending", "messages_scheduled"}
    reassignments = {s.labels["outcome"]: s.value for s in after["clarion_mobile_token_reassignments"].samples}
    assert reassignments == {"allowed": 0, "refused": 0}
    assert value(after, "clarion_http2_connections_opened", "clarion_http2_connections_opened_total", provider="fcm") >= 1
    # Labels are bounded: no token and no endpoint id in the exposition.
    for secret in good + [bad] + [arn.rsplit("/", 1)[1] for arn in endpoints]:
        assert secret not in after_text


def test_metrics_listen_moves_the_route_off_the_api_port():
    metrics_port = free_port()
    node = Node(["--database-url", fresh_database(), "--role", "api", "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                env=MASTER_KEY)
    try:
        node.wait_ready()
        status, body = http_get(node.url + "/metrics")
        assert status == 404, body
        status, text = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert status == 200
        names = {family.name for family in text_string_to_metric_families(text)}
        assert "clarion_api_requests" in names and "process_open_fds" in names
        # The API's own 404 for /metrics was counted, under no route (the path is not a label value).
        _, families = scrape(f"http://127.0.0.1:{metrics_port}")
        assert value(families, "clarion_api_requests", "clarion_api_requests_total", method="-", route="unmatched",
                     status_class="4xx") >= 1
    finally:
        assert node.stop() == 0


def test_metrics_off_serves_no_route():
    node = Node(["--database-url", fresh_database(), "--role", "api"], env={**MASTER_KEY, "CLARION_METRICS": "off"})
    try:
        node.wait_ready()
        status, _ = http_get(node.url + "/metrics")
        assert status == 404
    finally:
        assert node.stop() == 0


def test_a_dispatcher_only_node_serves_metrics_on_its_metrics_listener():
    # CLARION_ROLE=dispatcher has no API listener; its delivery metrics are still reachable.
    metrics_port = free_port()
    node = Node(["--database-url", fresh_database(), "--role", "dispatcher", "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                env=MASTER_KEY)
    try:
        deadline = time.time() + 60
        status = None
        while time.time() < deadline and status != 200:
            assert node.proc.poll() is None, node.output()
            try:
                status, text = http_get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2)
            except OSError:
                time.sleep(0.2)
        assert status == 200, node.output()
        names = {family.name for family in text_string_to_metric_families(text)}
        assert {"clarion_deliveries", "clarion_provider_response_seconds", "clarion_work_waiting"} <= names
        assert "clarion_api_connections_open" not in names  # no API listener, no API figures
    finally:
        assert node.stop() == 0
