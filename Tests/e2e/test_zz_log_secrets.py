"""Issue 17, "One structured logger": nothing secret and no full device token is ever logged. Runs last (the file
name sorts last): it reads the log of every node the run started and looks for every credential, API key, signing
secret and full device token the run handed Clarion (conftest records them as the tests send them)."""
import json
import os

import pytest

from conftest import NODE_LOGS, SECRETS_USED


def test_no_secret_or_full_device_token_reaches_a_node_log():
    logs = {}
    for path in NODE_LOGS:
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                logs[path] = f.read()
    if not logs or not SECRETS_USED:
        pytest.skip("no node ran, or no secret was used, in this run (run the whole suite)")
    leaks = [(secret[:4] + "…", len(secret), path) for secret in sorted(SECRETS_USED)
             for path, text in logs.items() if secret in text]
    assert not leaks, f"secrets or full device tokens in node logs (first 4 characters, length, log): {leaks}"
    for path, text in logs.items():
        assert "PRIVATE KEY" not in text, f"a private key in {path}"


def test_every_node_log_line_has_the_one_shape():
    """Every JSON line a node wrote starts with ts, level, logger, msg (the node's own lines and the access log);
    other lines are what the CLI prints for people (its banner) and PostgreSQL's own output."""
    lines = 0
    for path in NODE_LOGS:
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                entry = json.loads(line)
                assert list(entry)[:4] == ["ts", "level", "logger", "msg"], f"{path}: {line[:200]}"
                assert entry["level"] in ("debug", "info", "warning", "error"), line[:200]
                lines += 1
    if lines == 0:
        pytest.skip("no node ran in this run")
