"""Hardening 5 end to end: a node under a low open-file limit keeps its API connections below it, and when
`accept` does run out of descriptors it stops watching the listener instead of spinning, then serves the waiting
clients once connections close."""
import json
import os
import resource
import selectors
import socket
import time

from conftest import Node, fresh_database, http_get

REQUEST = b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n"
MASTER_KEY = {"CLARION_MASTER_KEY": "A" * 43 + "="}
TICKS = os.sysconf("SC_CLK_TCK")


def low_open_file_limit(limit):
    # Soft and hard alike, as `ulimit -n 160` does: the node cannot raise it.
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def cpu_seconds(pid):
    """User plus system CPU time of the whole process (every thread), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15)


def cpu_over(pid, seconds):
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return cpu_seconds(pid) - before


def connect(port, count):
    clients = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            s.sendall(REQUEST)
        except OSError:
            pass  # closed at once (over the limit): seen as refused below
        s.setblocking(False)
        clients.append(s)
    return clients


def answers(clients, wait):
    """Each client's status line within `wait` seconds: 'HTTP/1.1 200 OK', '' when the server closed without an
    answer, None when nothing came (yet)."""
    results = {s: None for s in clients}
    data = {s: b"" for s in clients}
    selector = selectors.DefaultSelector()
    for s in clients:
        selector.register(s, selectors.EVENT_READ)
    deadline = time.time() + wait
    while selector.get_map() and time.time() < deadline:
        for key, _ in selector.select(timeout=max(0.0, deadline - time.time())):
            s = key.fileobj
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if chunk:
                data[s] += chunk
                if b"\r\n" not in data[s]:
                    continue
                results[s] = data[s].split(b"\r\n")[0].decode()
            else:
                results[s] = ""
            selector.unregister(s)
    selector.close()
    return results


def log_line(node, message):
    for line in node.output().splitlines():
        if line.startswith("{") and json.loads(line).get("msg") == message:
            return json.loads(line)
    raise AssertionError(f"no '{message}' in the log: {node.output()}")


def close_all(clients):
    for s in clients:
        s.close()


def test_under_a_low_open_file_limit_the_connection_limit_fits_and_the_node_does_not_spin(clarion_bin):
    node = Node(["--database-url", fresh_database(), "--role", "api"], env=MASTER_KEY,
                preexec_fn=low_open_file_limit(160))
    try:
        node.wait_ready()
        chosen = log_line(node, "API connection limit lowered to fit the open-file limit")
        assert chosen["open_file_limit"] == "160" and chosen["configured"] == "4096", chosen
        limit = int(chosen["connections"])
        assert 16 <= limit < 160 - 40, chosen

        clients = connect(node.port, 140)
        statuses = list(answers(clients, 5).values())
        served = statuses.count("HTTP/1.1 200 OK")
        assert limit - 2 <= served <= limit, statuses
        assert statuses.count("") == 140 - served, "over the limit a connection is closed at once, not left waiting"
        busy = cpu_over(node.proc.pid, 2)
        assert busy < 0.15, f"{busy:.2f} s of CPU in 2 s while holding {served} connections"

        close_all(clients)
        assert http_get(node.url + "/health") == (200, '{"status":"ok"}')
    finally:
        node.stop()


def test_when_accept_runs_out_of_descriptors_the_listener_rests_and_resumes_as_connections_close(clarion_bin):
    node = Node(["--database-url", fresh_database(), "--role", "api"], env=MASTER_KEY,
                preexec_fn=low_open_file_limit(160))
    try:
        node.wait_ready()
        pid = node.proc.pid
        # Descriptors taken by something other than API connections (the reserve guessed low): lower the limit under
        # the running node, so `accept` fails with EMFILE well before the connection limit (86) is reached.
        in_use = len(os.listdir(f"/proc/{pid}/fd"))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (in_use + 15, in_use + 15))

        clients = connect(node.port, 60)
        first = answers(clients, 3)
        served = [s for s, status in first.items() if status == "HTTP/1.1 200 OK"]
        waiting = [s for s, status in first.items() if status is None]
        assert served and waiting, f"served {len(served)}, waiting {len(waiting)}: {list(first.values())}"
        assert len(served) + len(waiting) == 60, list(first.values())
        busy = cpu_over(pid, 2)
        assert busy < 0.15, f"{busy:.2f} s of CPU in 2 s with accept out of descriptors: the loop spins"

        # Connections closing free descriptors: the clients queued meanwhile are accepted and answered.
        close_all(served)
        later = answers(waiting, 5)
        assert any(status == "HTTP/1.1 200 OK" for status in later.values()), list(later.values())
        close_all(waiting)
        time.sleep(0.5)
        assert http_get(node.url + "/health") == (200, '{"status":"ok"}')
        assert node.proc.poll() is None
    finally:
        node.stop()
