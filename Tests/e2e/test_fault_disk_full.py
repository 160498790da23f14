"""Fault test: the disk under PostgreSQL fills while clients publish, then space returns.

The test's own cluster has its data directory on a tmpfs the test mounts (CLARION_FAULT_DISK_MB, default 128 MiB;
root only, skipped otherwise). Six client threads publish at full rate (as in the restart test); after a few
seconds a filler file takes every free byte of that filesystem, stays for CLARION_FAULT_FULL seconds (default 6),
and is removed; publishing goes on for a few more seconds.

What PostgreSQL does on a full disk decides the rest, and both ways are accepted and reported:
- a statement that must extend a table or index file fails with SQLSTATE 53100 ("could not extend file ...: No space
  left on device"); the server stays up and the next insert after the space returns succeeds;
- writing WAL cannot fail politely: a backend that cannot create a WAL segment PANICs, the postmaster restarts every
  backend and runs crash recovery, which itself needs to write and may fail while the disk is full, so the
  postmaster can exit. If it did, the test starts it again after the filler is removed (what an operator does) and
  reports that it had to.

Rules checked:
- While the disk is full, no publish is answered 500: a refused publish is 503 in the API's own format (SNS's XML
  ErrorResponse with Code ServiceUnavailable, the JSON envelope with service_unavailable). Publishes that still fit
  in space PostgreSQL already had are acknowledged, and count as acknowledged.
- The node's log names the cause: its one "database unavailable" line carries PostgreSQL's "No space left on device"
  (or, when the server died first, the lost connection, and then PostgreSQL's own log holds the PANIC).
- Nothing acknowledged is lost: every 2xx publish is stored and delivered exactly once; nothing is delivered twice.
- After the filler is removed the node recovers by itself: publishes are acknowledged again, /ready is 200, and
  the node was never restarted."""
import errno
import os
import re
import shutil
import subprocess
import time
from collections import Counter

import pytest

from faultdb import (Cluster, Emulator, Publishers, log_lines, setup_targets, start_node, summary, wait_for_deliveries,
                     workdir)

DISK_MB = int(os.environ.get("CLARION_FAULT_DISK_MB", "128"))
FULL = float(os.environ.get("CLARION_FAULT_FULL", "6"))
BEFORE, AFTER = 4.0, 6.0


def fill(path):
    """Writes zeros to `path` until the filesystem refuses; returns the bytes written."""
    written = 0
    chunk = b"\0" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 20, 1 << 12, 1):
            piece = chunk[:size]
            while True:
                try:
                    n = f.write(piece)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
                written += n or 0
                if not n:
                    break
    return written


@pytest.fixture
def stack():
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs under the test's PostgreSQL needs root")
    if not os.path.isdir("/usr/lib/postgresql"):
        pytest.skip("PostgreSQL is not installed")
    work = workdir("clarion-e2e-faultdisk-")
    disk = os.path.join(work, "disk")
    os.mkdir(disk)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0755", "tmpfs", disk],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    cluster = emulator = node = None
    try:
        cluster = Cluster(disk, log_path=os.path.join(work, "server.log"))
        cluster.start()
        emulator = Emulator(work)
        url = cluster.create_database("clarion")
        node = start_node(url, os.path.join(work, "node"))
        yield cluster, emulator, node, url, disk
    finally:
        if node is not None:
            node.stop()
        if emulator is not None:
            emulator.stop()
        if cluster is not None:
            cluster.stop("immediate")
        subprocess.run(["umount", "-l", disk], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def test_disk_fills_under_postgresql(stack):
    cluster, emulator, node, url, disk = stack
    arns, api_key = setup_targets(node, emulator, url)
    log_before = len(log_lines(node))
    server_log_before = len(cluster.server_log())
    free_before = shutil.disk_usage(disk).free

    publishers = Publishers(node, arns, api_key)
    started = time.time()
    publishers.start()
    time.sleep(BEFORE)

    filler = os.path.join(disk, "filler")
    full_at = time.time()
    filled = fill(filler)
    full_until = full_at + FULL
    time.sleep(max(0.0, full_until - time.time()))
    os.remove(filler)
    freed_at = time.time()
    died = not cluster.running()
    if died:
        cluster.start()
    restarted_at = time.time()

    time.sleep(AFTER)
    publishers.stop()
    ended = time.time()

    outcomes = publishers.outcomes
    acknowledged = publishers.acknowledged()
    statuses = Counter(o.status for o in outcomes)
    during = [o for o in outcomes if o.started >= full_at + 1.0 and o.finished <= freed_at]
    refused = [o for o in during if o.status == 503]
    recovered = min((o.finished for o in acknowledged if o.started >= restarted_at), default=None)

    wanted = {o.uid for o in acknowledged}
    wait_for_deliveries(cluster, emulator, acknowledged)
    delivered = Counter(emulator.delivered())
    stored = set(cluster.psql("clarion", "SELECT external_id::text FROM messages").split())

    lines = log_lines(node)[log_before:]
    unavailable = [l for l in lines if l.get("msg") == "database unavailable"]
    available = [l for l in lines if l.get("msg") == "database available again"]
    server_log = cluster.server_log()[server_log_before:]
    figures = {
        "disk_mb": DISK_MB, "free_mb_before": round(free_before / 2**20, 1), "filler_mb": round(filled / 2**20, 1),
        "seconds": round(ended - started, 1), "full_seconds": round(freed_at - full_at, 2),
        "postgres_panicked": "PANIC" in server_log, "postmaster_died": died,
        "publishes": len(outcomes), "acknowledged": len(acknowledged),
        "acknowledged_while_full": sum(1 for o in during if o.status and 200 <= o.status < 300),
        "answers_while_full": len(during), "answers_503_while_full": len(refused),
        "delivered_acknowledged": sum(1 for uid in wanted if delivered[uid] >= 1),
        "delivered_total": sum(delivered.values()),
        "duplicates": sum(n - 1 for n in delivered.values() if n > 1),
        "statuses": {str(k): v for k, v in statuses.items()},
        "max_answer_seconds": round(max(o.finished - o.started for o in outcomes), 2),
        "recovery_seconds_first_2xx": round(recovered - restarted_at, 2) if recovered else None,
        "log_unavailable": [l.get("cause", "") for l in unavailable],
        "log_available_again": len(available),
        "server_log_no_space": sum(1 for l in server_log.splitlines() if "No space left on device" in l),
        # What PostgreSQL itself did, in its own words, in order (each line once).
        "server_log_events": list(dict.fromkeys(
            re.sub(r"^\S+ \S+ \S+ \[\d+\] ", "", l)[:160] for l in server_log.splitlines()
            if re.search(r"PANIC|terminated by|exit code|aborting|shut down|ready to accept|redo|startup process|"
                         r"all server processes terminated", l))),
        "recovery_seconds_after_space_returned": round(recovered - freed_at, 2) if recovered else None,
    }
    summary("disk-full", figures)

    # Nothing acknowledged is lost or sent twice.
    missing_rows = [o for o in acknowledged if o.message_id.lower() not in stored]
    assert not missing_rows, f"{len(missing_rows)} acknowledged publishes have no row, e.g. {missing_rows[0].uid}"
    assert all(delivered[uid] == 1 for uid in wanted)
    duplicates = {uid: n for uid, n in delivered.items() if n > 1}
    assert not duplicates, f"{len(duplicates)} publishes delivered more than once, e.g. {list(duplicates.items())[:3]}"

    # A full disk is 503 in each API's format, never 500 and never a hang.
    assert statuses.get(500, 0) == 0, [(o.api, o.code, o.body) for o in outcomes if o.status == 500][:5]
    assert refused, f"no publish was refused while the disk was full: {figures}"
    for o in during:
        assert o.status in (200, 202, 503), (o.api, o.status, o.code, o.body)
        if o.status == 503:
            assert o.code == ("ServiceUnavailable" if o.api == "sns" else "service_unavailable"), (o.api, o.code, o.body)
    assert figures["max_answer_seconds"] < Publishers.TIMEOUT, figures

    # The cause is in the node's log, once.
    assert len(unavailable) == 1, unavailable
    cause = unavailable[0].get("cause", "")
    assert "No space left on device" in cause or (figures["postgres_panicked"] and "PANIC" in server_log), (cause, server_log[-2000:])
    assert len(available) == 1, available

    # Recovery without restarting the node.
    assert recovered is not None, "no publish succeeded after the space returned"
    assert node.proc.poll() is None
