"""`clarion config print --help`: every setting listed whole, in aligned columns (Hardening 12b), and the
connection and slow-client settings (Hardening 4) parsed with their defaults."""
import os
import subprocess

from conftest import CLARION


def config(*args, env=None):
    return subprocess.run([CLARION, "config", *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def test_config_help_lists_every_setting_whole_with_its_help_in_one_column(clarion_bin):
    r = config("print", "--help")
    assert r.returncode == 0, r.stderr
    printed = config("print")
    keys = [line.split("=", 1)[0] for line in printed.stdout.splitlines()]
    rows = [line for line in r.stdout.splitlines() if line.startswith("  CLARION_")]
    assert len(rows) == len(keys) >= 20
    help_columns = set()
    for key, row in zip(keys, rows):
        name, flag = row.split()[:2]
        # The longest name was cut to 28 characters: CLARION_WEBHOOK_ALLOW_PRIVAT.
        assert name == key, row
        assert flag.startswith("--"), row
        help_columns.add(len(row) - len(row[row.index(flag) + len(flag):].lstrip()))
    assert "  CLARION_WEBHOOK_ALLOW_PRIVATE  " in r.stdout
    assert len(help_columns) == 1, f"help text starts at columns {sorted(help_columns)}"


def test_connection_and_slow_client_settings_have_defaults_and_ranges(clarion_bin):
    out = config("print").stdout
    for line in ["CLARION_MAX_CONNECTIONS=4096", "CLARION_HEAD_TIMEOUT=20", "CLARION_BODY_TIMEOUT=30",
                 "CLARION_BODY_MIN_RATE=16384"]:
        assert line in out.splitlines(), out
    r = config("print", "--max-connections", "100", "--head-timeout=5", "--body-min-rate", "0",
               env={"CLARION_BODY_TIMEOUT": "7"})
    assert r.returncode == 0, r.stderr
    for line in ["CLARION_MAX_CONNECTIONS=100", "CLARION_HEAD_TIMEOUT=5", "CLARION_BODY_TIMEOUT=7",
                 "CLARION_BODY_MIN_RATE=0"]:
        assert line in r.stdout.splitlines(), r.stdout
    for flag, value in [("--max-connections", "0"), ("--head-timeout", "0"), ("--body-timeout", "x"),
                        ("--body-min-rate", "-1")]:
        bad = config("print", flag, value)
        assert bad.returncode == 78, (flag, value, bad.stdout, bad.stderr)
