"""Issue 2 end to end: the embedded default, migrations from two processes, configuration, exit codes."""
import os
import signal
import subprocess
import tempfile
import time

from conftest import CLARION, Node, fresh_database, http_get


def postmaster_alive(data_dir):
    pid_file = os.path.join(data_dir, "postgres", "data", "postmaster.pid")
    if not os.path.exists(pid_file):
        return False
    pid = int(open(pid_file).read().split("\n")[0])
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_embedded_default_comes_up_answers_ready_stops_and_restarts_on_same_data(clarion_bin):
    data = tempfile.mkdtemp(prefix="clarion-e2e-data-")
    node = Node(["--data-dir", data])
    node.wait_ready()
    assert http_get(node.url + "/health") == (200, '{"status":"ok"}')
    status, body = http_get(node.url + "/ready")
    assert status == 200, body
    assert postmaster_alive(data)
    key = open(os.path.join(data, "master.key")).read()
    assert oct(os.stat(os.path.join(data, "master.key")).st_mode & 0o777) == "0o600"
    assert "generated a master key" in node.output()
    assert node.stop(signal.SIGTERM) == 0
    assert not postmaster_alive(data), "the embedded cluster must stop with the node"

    again = Node(["--data-dir", data])
    again.wait_ready()
    assert open(os.path.join(data, "master.key")).read() == key, "the master key is kept"
    assert "migrations applied" not in again.output(), "a second start applies nothing"
    assert again.stop(signal.SIGINT) == 0
    assert not postmaster_alive(data)


def test_two_migrate_processes_at_once_apply_each_migration_once(clarion_bin):
    url = fresh_database()
    procs = [subprocess.Popen([CLARION, "migrate", "--database-url", url], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    rows = subprocess.run(["psql", url, "-tAc", "SELECT version, count(*) FROM schema_migrations GROUP BY version"],
                          capture_output=True, text=True, check=True).stdout.split()
    versions = [r.split("|") for r in rows]
    assert versions and all(count == "1" for _, count in versions)
    # Running again is a no-op.
    again = subprocess.run([CLARION, "migrate", "--database-url", url], capture_output=True, text=True)
    assert again.returncode == 0 and "up to date" in again.stdout


def test_down_database_is_a_clear_error_with_exit_69_not_a_hang(clarion_bin):
    started = time.time()
    r = subprocess.run([CLARION, "migrate", "--database-url", "postgresql://postgres@127.0.0.1:1/none"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 69
    assert "cannot connect" in r.stderr
    assert time.time() - started < 15


def test_config_print_masks_secrets_and_follows_precedence(clarion_bin, tmp_path):
    conf = tmp_path / "clarion.env"
    conf.write_text("# a comment\nCLARION_REGION=eu-west-1\nCLARION_LISTEN=127.0.0.1:7000\n"
                    "CLARION_MASTER_KEY=c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTMyYg==\n")
    env = dict(os.environ, CLARION_LISTEN="127.0.0.1:7001",
               CLARION_DATABASE_URL="postgresql://app:hunter2@db.internal/clarion",
               CLARION_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG", CLARION_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE")
    r = subprocess.run([CLARION, "config", "print", "--config", str(conf), "--listen", "127.0.0.1:7002"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "CLARION_REGION=eu-west-1" in out           # from the file
    assert "CLARION_LISTEN=127.0.0.1:7002" in out      # flag beats env beats file
    assert "hunter2" not in out and "wJalrXUtnFEMI" not in out and "c2VjcmV0" not in out
    assert "CLARION_DATABASE_URL=postgresql://app:****@db.internal/clarion" in out
    assert "CLARION_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE" in out


def test_exit_codes_scripts_can_rely_on(clarion_bin):
    assert subprocess.run([CLARION, "--help"], capture_output=True).returncode == 0
    for command in ["serve", "migrate", "config", "emulator"]:
        r = subprocess.run([CLARION, command, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "clarion " + command in r.stdout
    assert subprocess.run([CLARION, "nonsense"], capture_output=True).returncode == 64
    assert subprocess.run([CLARION, "serve", "--no-such-flag"], capture_output=True).returncode == 64
    bad = subprocess.run([CLARION, "config", "print"], capture_output=True, text=True,
                         env=dict(os.environ, CLARION_ACCOUNT_ID="12"))
    assert bad.returncode == 78 and "CLARION_ACCOUNT_ID" in bad.stderr
    nokey = subprocess.run([CLARION, "serve", "--database-url", fresh_database(), "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                                               if k != "CLARION_MASTER_KEY"})
    assert nokey.returncode == 78 and "CLARION_MASTER_KEY is required" in nokey.stderr


def test_serve_on_an_existing_postgresql(clarion_bin):
    url = fresh_database()
    node = Node(["--database-url", url], env={"CLARION_MASTER_KEY": "A" * 43 + "="})
    node.wait_ready()
    assert http_get(node.url + "/ready")[0] == 200
    assert node.stop() == 0


def test_accounts_beside_a_running_serve_does_not_stop_its_database(clarion_bin):
    data = tempfile.mkdtemp(prefix="clarion-e2e-data-")
    node = Node(["--data-dir", data])
    node.wait_ready()
    r = subprocess.run([CLARION, "accounts", "create-access-key", "--data-dir", data], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "AccessKeyId: AKIA" in r.stdout and "SecretAccessKey: " in r.stdout
    secret = r.stdout.split("SecretAccessKey: ")[1].strip()
    assert secret not in r.stderr, "a secret never reaches the logs"
    assert http_get(node.url + "/ready")[0] == 200
    assert postmaster_alive(data)
    assert node.stop() == 0
    assert not postmaster_alive(data)


def test_the_demo_key_works_on_loopback_only_and_the_node_says_so(clarion_bin):
    """scripts/run's demo SNS key pair is public: it must work only while the API listens on loopback. A later
    start on a public address disables the stored key and refuses it, and says so at start."""
    demo = {"CLARION_ACCESS_KEY_ID": "AKIACLARIONDEMO00001", "CLARION_SECRET_ACCESS_KEY": "clarion-demo-secret-change-me"}
    env = dict(os.environ, AWS_ACCESS_KEY_ID=demo["CLARION_ACCESS_KEY_ID"],
               AWS_SECRET_ACCESS_KEY=demo["CLARION_SECRET_ACCESS_KEY"], AWS_DEFAULT_REGION="us-east-1", AWS_MAX_ATTEMPTS="1")

    def list_topics(node):
        return subprocess.run(["aws", "--endpoint-url", node.url, "sns", "list-topics"], capture_output=True, text=True,
                              env=env, timeout=60)

    data = tempfile.mkdtemp(prefix="clarion-e2e-data-")
    node = Node(["--data-dir", data], env=demo)
    node.wait_ready()
    assert list_topics(node).returncode == 0
    assert "demo SNS access key is enabled" in node.output()
    assert node.stop() == 0

    # The same data directory, now listening on every address (reached here through 127.0.0.1 all the same).
    public = Node(["--data-dir", data], env=demo, listen_host="0.0.0.0")
    public.wait_ready()
    refused = list_topics(public)
    assert refused.returncode != 0 and "InvalidClientTokenId" in refused.stderr, refused.stderr
    assert "demo SNS access key is refused" in public.output()
    assert public.stop() == 0
    # And without the demo variables the stored key stays disabled.
    plain = Node(["--data-dir", data], listen_host="0.0.0.0")
    plain.wait_ready()
    assert list_topics(plain).returncode != 0
    assert plain.stop() == 0
