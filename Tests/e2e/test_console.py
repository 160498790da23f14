"""Issue 17 "A web console" end to end, in a real browser: Debian's chromium driven by Selenium through
/usr/bin/chromedriver (headless; scripts/install-deps installs both, and selenium from PyPI).

Seeded through the SNS Query API (boto3) and the native API: an FCM application (SuccessFeedbackSampleRate 100, so
every delivery is in the delivery log), a topic with four endpoints (one token the emulator refuses as invalid), a
user's endpoint, and a campaign whose opens are moved (in SQL) to three known hours. The test signs in with a wrong
key (an error), then the right one; finds the application; publishes to the topic and watches the message page reach
Completed with its counts, failure reason and delivery log; opens the topic page, the endpoint lookup, and the
campaign report, whose SVG charts must have one bar per hour from the first open's hour to the last (5, with opens
1, 0, 1, 0, 1) and three points (p50, p90, p99 of 600, 7800 and 15000 seconds).

With CLARION_CONSOLE_SCREENSHOTS=<dir> it saves a PNG of each page there (docs/console/ holds the ones the README
shows); without it, it saves nothing, so CI never rewrites the repository."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import boto3
import pytest
from botocore.config import Config

from conftest import CLARION, Node, call, fresh_database, h2_get, used_secret, wait_for

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    SELENIUM_MISSING = None
except ImportError as error:  # fails this test (not the suite's collection), saying why; never a skip
    SELENIUM_MISSING = error

KEY = "AKIACLARIONE2ECONSOLE"
SECRET = "e2e-console-secret-0123456789abcdefghij"
MASTER_KEY = {"CLARION_MASTER_KEY": "C" * 43 + "="}
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
SHOTS = os.environ.get("CLARION_CONSOLE_SCREENSHOTS", "")



@pytest.fixture(scope="module")
def stack():
    if SELENIUM_MISSING is not None:
        pytest.fail(f"selenium is missing ({SELENIUM_MISSING}): scripts/install-deps --python installs it")
    for path, package in ((CHROMEDRIVER, "chromium-driver"), (CHROMIUM, "chromium")):
        # Not a skip: without the browser the console is untested, and CI installs both (scripts/install-deps).
        assert os.path.exists(path), f"{path} is missing: install Debian's {package} (scripts/install-deps does)"
    data = tempfile.mkdtemp(prefix="clarion-e2e-console-")
    database = fresh_database()
    node = Node(["--database-url", database, "--data-dir", data, "--with-emulator"],
                env={"CLARION_ACCESS_KEY_ID": KEY, "CLARION_SECRET_ACCESS_KEY": SECRET, **MASTER_KEY})
    browser = None
    try:  # the node (and the browser) stop whatever fails, setup included
        node.wait_ready()
        output = node.output().replace("\\/", "/")
        match = re.search(r'"msg":"provider emulator running \(h2c\)".*?"url":"([^"]+)"', output) \
            or re.search(r'"url":"(http:[^"]+)"[^\n]*provider emulator running', output)
        assert match, output
        made = subprocess.run([CLARION, "accounts", "create-api-key", "--database-url", database],
                              capture_output=True, text=True, timeout=60, env={**os.environ, **MASTER_KEY})
        assert made.returncode == 0, made.stderr
        api_key = made.stdout.split("key: ")[1].strip()
        used_secret(api_key)
        sns = boto3.client("sns", endpoint_url=node.url, region_name="us-east-1", aws_access_key_id=KEY,
                           aws_secret_access_key=SECRET, config=Config(retries={"max_attempts": 1}))
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,1100", "--disable-extensions", "--no-first-run"):
            options.add_argument(argument)
        # Service(path) with an explicit driver: Selenium Manager (a download) is never consulted.
        browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        browser.set_page_load_timeout(30)
        yield node, sns, match.group(1), data + "/demo", database, api_key, browser
    finally:
        if browser is not None:
            browser.quit()
        assert node.stop() == 0
        shutil.rmtree(data, ignore_errors=True)


def psql(database, sql):
    r = subprocess.run(["psql", database, "-qAtc", sql], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def shot(browser, name):
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        browser.save_screenshot(os.path.join(SHOTS, name + ".png"))


def text(browser, element_id):
    return browser.find_element(By.ID, element_id).text


def test_console_in_a_real_browser(stack):
    node, sns, emulator, demo, database, api_key, browser = stack
    bearer = {"Authorization": "Bearer " + api_key}
    wait = WebDriverWait(browser, 20, poll_frequency=0.1)

    # --- Security headers and the key rule, before any browser -------------------------------------------------------
    with urllib.request.urlopen(node.url + "/console") as r:
        headers = r.headers
        page = r.read().decode()
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    assert "<script>" not in page and " style=" not in page and "https://" not in page   # nothing inline, no CDN
    status, body = call(node.url + "/v1/applications/GCM:nothing/summary", "GET")
    assert status == 401 and body["error"]["code"] == "unauthorized"

    # --- Seed ------------------------------------------------------------------------------------------------------
    name = "console-android-" + str(int(time.time() * 1000))
    sns.create_platform_application(Name=name, Platform="GCM", Attributes={
        "PlatformCredential": open(demo + "/fcm-service-account.json").read(), "ProviderEndpoint": emulator,
        "SuccessFeedbackSampleRate": "100"})
    sns.create_platform_application(Name="other-" + name, Platform="GCM", Attributes={
        "PlatformCredential": open(demo + "/fcm-service-account.json").read(), "ProviderEndpoint": emulator})
    app = "GCM:" + name
    tokens = [f"console-token-{i}-" + "x" * 40 for i in range(3)]
    bad = "invalid-console-token-" + "y" * 40   # emulator rule: FCM "invalid-..." is 400 INVALID_ARGUMENT
    endpoints = []
    for i, token in enumerate(tokens + [bad]):
        s, e = call(node.url + f"/v1/applications/{app}/endpoints", "POST",
                    {"token": token, **({"user_id": "alice-console"} if i == 0 else {})}, bearer)
        assert s == 201, e
        endpoints.append(e["id"])
    # Markup in API data (a user id is free text) must show as text, never run (docs/security.md, "The web console").
    markup = '<img src="x" onerror="window.pwned=1"><b>bold</b>'
    s, e = call(node.url + f"/v1/applications/GCM:other-{name}/endpoints", "POST",
                {"token": "console-markup-token-" + "z" * 40, "user_id": markup}, bearer)
    assert s == 201, e
    markup_endpoint = e["id"]
    topic = "console-news"
    assert call(node.url + "/v1/topics", "POST", {"name": topic}, bearer)[0] == 201
    for e in endpoints:
        assert call(node.url + f"/v1/topics/{topic}/subscriptions", "POST", {"endpoint": e}, bearer)[0] == 201

    # A campaign to the three good endpoints, opened by all three.
    s, accepted = call(node.url + "/v1/publish", "POST", {
        "targets": [{"endpoint": e} for e in endpoints[:3]], "message": "Winter sale",
        "campaign": {"id": "winter-" + str(time.time_ns()), "name": "Winter", "namespace": "acme"}}, bearer)
    assert s == 202, accepted
    campaign = accepted["campaign"]

    def delivered():
        records = [json.loads(line) for line in h2_get(emulator + "/_emulator/records").splitlines() if line.strip()]
        mine = {r["token"]: r for r in records if r.get("token") in tokens and r.get("status") == 200}
        return mine if len(mine) == 3 else None

    records = wait_for(delivered, timeout=30, what="the three campaign pushes at the emulator")
    # One push to the other application, whose SuccessFeedbackSampleRate is SNS's default 0: the delivery log keeps
    # no success of it, and its row must still count it (exact counts per application and minute, schema v23).
    assert call(node.url + "/v1/publish", "POST", {"targets": [{"endpoint": markup_endpoint}], "message": "hi"}, bearer)[0] == 202

    def counted():
        s, body = call(node.url + f"/v1/applications/GCM:other-{name}/summary", "GET", None, bearer)
        return body if s == 200 and body["last_hour"]["accepted"] == 1 else None

    other_summary = wait_for(counted, timeout=30, what="the other application's push counted")
    assert other_summary["last_hour"]["logged_successes"] == 0 and other_summary["last_hour"]["sent"] == 1
    for token in tokens:
        delivery = json.loads(json.loads(records[token]["payload"])["message"]["data"]["acme"])["delivery_id"]
        assert call(node.url + "/v1/beacons/open", "POST", {"delivery_id": delivery})[0] == 204
    wait_for(lambda: call(node.url + f"/v1/campaigns/{campaign}/report", "GET", None, bearer)[1]["opens"]["unique"] == 3,
             timeout=15, what="three opens in the report")
    # Known hours: published at hour P, opened 10 minutes into P, P+2h and P+4h.
    psql(database, f"""
        UPDATE messages SET published_at = date_trunc('hour', now()) - interval '5 hours'
        WHERE campaign = (SELECT id FROM campaigns WHERE external_id = '{campaign}');
        WITH ranked AS (SELECT o.message, o.endpoint, m.published_at, row_number() OVER (ORDER BY o.message) - 1 AS i
                        FROM opens o JOIN messages m ON m.id = o.message
                        WHERE m.campaign = (SELECT id FROM campaigns WHERE external_id = '{campaign}'))
        UPDATE opens o SET first_opened_at = r.published_at + interval '10 minutes' + r.i * interval '2 hours',
                           last_opened_at = r.published_at + interval '10 minutes' + r.i * interval '2 hours'
        FROM ranked r WHERE o.message = r.message AND o.endpoint = r.endpoint""")

    # --- Sign in: a wrong key is an error, the right one opens the applications page ---------------------------------
    browser.get(node.url + "/console")
    wait.until(lambda b: b.find_element(By.ID, "signin").is_displayed())
    browser.find_element(By.ID, "key").send_keys("clarion-wrong-key-0123456789abcdef")
    browser.find_element(By.ID, "signin-button").click()
    wait.until(lambda b: "invalid_api_key" in text(b, "signin-error"))
    assert not browser.find_element(By.ID, "nav").is_displayed()
    shot(browser, "signin-error")
    browser.find_element(By.ID, "key").send_keys(api_key)
    browser.find_element(By.ID, "signin-button").click()
    wait.until(lambda b: b.find_elements(By.ID, "applications-table"))
    # The key is in sessionStorage and nowhere in the URL.
    assert browser.execute_script("return sessionStorage.getItem('clarion.apiKey')") == api_key
    assert api_key not in browser.current_url

    # --- Applications: find the seeded one -------------------------------------------------------------------------
    browser.find_element(By.ID, "app-filter").send_keys(name)
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#applications-table tbody tr")) == 2)  # it and other-
    row = browser.find_element(By.CSS_SELECTOR, f'#applications-table tr[data-application="{app}"]')
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    # name, platform, status, enabled / disabled / stale endpoints, send rate, outcomes (3 campaign pushes logged)
    assert cells[:6] == [name, "GCM", "enabled", "4", "0", "0"], cells
    assert "3 succeeded" in cells[7] and "0 failed" in cells[7], cells
    assert "(3 sent, " in cells[6], cells
    other_row = browser.find_element(By.CSS_SELECTOR, f'#applications-table tr[data-application="GCM:other-{name}"]')
    other_cells = [c.text for c in other_row.find_elements(By.TAG_NAME, "td")]
    assert "1 succeeded, 0 failed" in other_cells[7] and "(1 sent, " in other_cells[6], other_cells

    # --- Publish to the topic; the message page reaches Completed ---------------------------------------------------
    s, published = call(node.url + "/v1/publish", "POST", {"targets": [{"topic": topic}], "message": "Hello console"}, bearer)
    assert s == 202, published
    message = published["messages"][0]["id"]
    browser.find_element(By.ID, "nav-messages").click()
    browser.find_element(By.ID, "message-id").send_keys(message + "\n")
    wait.until(lambda b: b.find_elements(By.ID, "message-state") and text(b, "message-state") == "Completed")
    wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#delivery-log tbody tr")) == 4)
    assert text(browser, "count-targeted") == "4" and text(browser, "count-accepted") == "3"
    assert text(browser, "count-failed") == "1" and text(browser, "message-percent") == "100.0%"
    assert browser.find_element(By.ID, "message-progress").get_attribute("value") == "1"
    failure_rows = browser.find_elements(By.CSS_SELECTOR, "#failures-table tbody tr")
    assert len(failure_rows) == 1 and failure_rows[0].find_elements(By.TAG_NAME, "td")[1].text == "1"
    log_text = browser.find_element(By.ID, "delivery-log").text
    assert log_text.count("SUCCESS") == 3 and log_text.count("FAILURE") == 1
    assert bad not in browser.page_source and tokens[0] not in browser.page_source   # prefixes only
    assert "invalid-" in log_text   # the failing endpoint's token prefix ("invalid-", 8 characters)
    shot(browser, "message")

    # The application page now shows the disabled endpoint and the hour's failure.
    browser.get(node.url + f"/console#/applications?q={name}")
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, f'#applications-table tr[data-application="{app}"]'))
    cells = [c.text for c in browser.find_element(
        By.CSS_SELECTOR, f'#applications-table tr[data-application="{app}"]').find_elements(By.TAG_NAME, "td")]
    assert cells[3:6] == ["3", "1", "0"] and "1 failed" in cells[7] and "6 succeeded" in cells[7], cells
    assert "(7 sent, " in cells[6], cells   # exact: 3 campaign pushes, then 4 for the topic message
    shot(browser, "applications")

    # --- Topics ----------------------------------------------------------------------------------------------------
    browser.find_element(By.ID, "nav-topics").click()
    card = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, f'div[data-topic="{topic}"]'))[0]
    assert [d.text for d in card.find_elements(By.TAG_NAME, "dd")] == ["4", "4", "0"]   # all, to endpoints, pending
    assert card.find_element(By.CSS_SELECTOR, f'a[href="#/messages/{message}"]').text == message
    assert "Completed" in card.text
    shot(browser, "topics")

    # --- Endpoint lookup by user id and by token prefix -------------------------------------------------------------
    browser.find_element(By.ID, "nav-endpoints").click()
    browser.find_element(By.ID, "lookup-value").send_keys("alice-console\n")
    cards = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#lookup-results div[data-endpoint]"))
    assert [c.get_attribute("data-endpoint") for c in cards] == [endpoints[0]]
    assert "console-…" in cards[0].text and tokens[0] not in browser.page_source
    assert cards[0].text.count("SUCCESS") == 2   # the campaign push and the topic push
    shot(browser, "endpoints")
    browser.get(node.url + "/console#/endpoints?token_prefix=invalid-console")
    cards = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#lookup-results div[data-endpoint]"))
    assert [c.get_attribute("data-endpoint") for c in cards] == [endpoints[3]] and "disabled" in cards[0].text

    browser.get(node.url + "/console#/endpoints?user_id=" + urllib.parse.quote(markup, safe=""))
    cards = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#lookup-results div[data-endpoint]"))
    assert len(cards) == 1 and markup in cards[0].text   # shown as the characters it is
    assert not browser.find_elements(By.CSS_SELECTOR, "#lookup-results img, #lookup-results b")
    assert browser.execute_script("return window.pwned") is None

    # --- Campaign report with its charts ----------------------------------------------------------------------------
    browser.find_element(By.ID, "nav-campaigns").click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, f'#campaigns-table a[href="#/campaigns/{campaign}"]'))[0].click()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#opens-per-hour rect.bar"))
    bars = browser.find_elements(By.CSS_SELECTOR, "#opens-per-hour rect.bar")
    assert [b.get_attribute("data-opens") for b in bars] == ["1", "0", "1", "0", "1"]
    heights = [float(b.get_attribute("height")) for b in bars]
    assert heights[0] == heights[2] == heights[4] > 0 and heights[1] == heights[3] == 0
    points = browser.find_elements(By.CSS_SELECTOR, "#time-to-open circle.point")
    # percentile_cont over 600, 7800, 15000 s: p50 7800, p90 13560, p99 14856.
    assert [round(float(p.get_attribute("data-seconds"))) for p in points] == [7800, 13560, 14856]
    assert text(browser, "campaign-opens") == "3" and text(browser, "campaign-accepted") == "3"
    shot(browser, "campaign")

    # --- A/B variants: the per-variant table, names (publisher text) as text ---------------------------------------
    ab = "console-ab-" + str(time.time_ns())
    s, accepted = call(node.url + "/v1/publish", "POST", {
        "targets": [{"topic": topic}], "campaign": {"id": ab, "name": "AB", "namespace": "acme"}, "holdout": 20,
        "variants": [{"name": markup, "weight": 1, "message": "Copy one"}, {"name": "B", "weight": 1, "message": "Copy two"}]},
        bearer)
    assert s == 202, accepted
    report = wait_for(lambda: (lambda r: r if sum(v["targeted"] for v in r["variants"]) == len(endpoints) else None)(
        call(node.url + f"/v1/campaigns/{ab}/report", "GET", None, bearer)[1]), timeout=30, what="the A/B campaign counted")
    browser.get(node.url + f"/console#/campaigns/{ab}")
    rows = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#campaign-variants tbody tr"))
    cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    assert [c[:6] for c in cells] == [[v["name"], str(v["weight"]), str(v["sent"]), str(v["accepted"]), str(v["held_out"]),
                                       str(v["opens"])] for v in report["variants"]], (cells, report["variants"])
    assert cells[0][0] == markup and not browser.find_elements(By.CSS_SELECTOR, "#campaign-variants img, #campaign-variants b")
    assert text(browser, "campaign-held-out") == str(report["deliveries"]["held_out"])
    assert browser.execute_script("return window.pwned") is None

    # --- Signing out forgets the key -------------------------------------------------------------------------------
    browser.find_element(By.ID, "signout").click()
    assert browser.execute_script("return sessionStorage.getItem('clarion.apiKey')") is None
    assert browser.find_element(By.ID, "signin").is_displayed()
