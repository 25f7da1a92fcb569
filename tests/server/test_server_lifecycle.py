"""Sessions over time: capacity, cancellation, concurrency, draining, a killed server."""
import concurrent.futures
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import ROOT, SBX, Server, processes_with, wait_until


def test_capacity_is_429_with_retry_after():
    server = Server("--pool", "0", "--max-sessions", "2")
    try:
        first = server.session()
        server.session()
        status, error, headers = server.request("POST", "/v1/sessions", {})
        assert (status, error["error"]["code"]) == (429, "limit")
        assert headers.get("Retry-After") == "1"
        server.request("DELETE", f"/v1/sessions/{first}")
        server.session()
    finally:
        assert server.stop() == 0


def test_idle_sessions_end():
    server = Server("--pool", "0")
    try:
        session = server.session({"idle_timeout": 1})
        server.request("POST", f"/v1/sessions/{session}/exec", {"shell": "sleep 3131.5 & true"})
        assert wait_until(lambda: processes_with(b"3131.5"))  # the shell may exit first
        assert wait_until(lambda: server.request("GET", f"/v1/sessions/{session}")[0] == 404, 10)
        assert wait_until(lambda: not processes_with(b"3131.5"), 5)
    finally:
        server.stop()


def test_a_client_that_disconnects_cancels_its_execution():
    server = Server("--pool", "0")
    try:
        session = server.session()
        server.execute(session, "x = 1")
        body = ('{"code_blocks": [{"language": "bash", "code": "sleep 2727.5"}]}').encode()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(server.socket_path)
        sock.sendall(b"POST /v1/sessions/%s/execute HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                     % (session.encode(), len(body)) + body)
        assert wait_until(lambda: processes_with(b"2727.5"), 30)
        sock.close()
        assert wait_until(lambda: not processes_with(b"2727.5"), 10)
        result = server.execute(session, "print('x' in globals())")
        assert result["stdout"] == "False\n"
        assert "cancelled" in result["notice"]
    finally:
        server.stop()


def test_a_disconnect_cancels_only_the_execution_of_its_own_request():
    """One watcher serves every connection: closing one cancels its execution and nothing
    else, neither another connection's nor, once its request has finished, a later one."""
    server = Server("--pool", "0")

    def start(session, seconds):
        body = ('{"code_blocks": [{"language": "bash", "code": "sleep %s"}]}' % seconds).encode()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(server.socket_path)
        sock.sendall(b"POST /v1/sessions/%s/execute HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: %d\r\n\r\n" % (session.encode(), len(body)) + body)
        assert wait_until(lambda: processes_with(seconds.encode()), 30)
        return sock

    try:
        first, second = server.session(), server.session()
        a = start(first, "2727.6")
        b = start(second, "2727.7")
        a.close()
        assert wait_until(lambda: not processes_with(b"2727.6"), 10)
        time.sleep(1)
        assert processes_with(b"2727.7")
        b.close()
        assert wait_until(lambda: not processes_with(b"2727.7"), 10)
        # A keep-alive connection whose request has finished, closed during a later execution
        # of the same session on another connection.
        finished = server.connection()
        finished.request("POST", f"/v1/sessions/{first}/execute",
                         body=json.dumps({"code_blocks": [{"language": "python", "code": "1"}]}))
        assert finished.getresponse().read()
        later = start(first, "2727.8")
        finished.close()
        time.sleep(1)
        assert processes_with(b"2727.8")
        later.close()
        assert wait_until(lambda: not processes_with(b"2727.8"), 10)
    finally:
        server.stop()


def test_a_client_gone_before_its_request_is_served_runs_nothing():
    """The request arrives with the connection already closed: the disconnect comes before the
    execution starts (here, while the session's sandbox is still starting) and still counts."""
    server = Server("--pool", "0")
    try:
        session = server.session()
        body = ('{"code_blocks": [{"language": "bash", "code": "touch ran"}]}').encode()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(server.socket_path)
        sock.sendall(b"POST /v1/sessions/%s/execute HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                     % (session.encode(), len(body)) + body)
        sock.close()
        served = lambda: server.request("GET", f"/v1/sessions/{session}")[1]
        assert wait_until(lambda: served()["executions"] == 1 and not served()["busy"], 30)
        status, _, _ = server.request("GET", f"/v1/sessions/{session}/files/ran", raw=True)
        assert status == 404
        metrics = server.request("GET", "/metrics", raw=True)[1]
        assert b'sbx_executions_total{status="cancelled"} 1' in metrics, metrics
        assert server.execute(session, "print('next')")["stdout"] == "next\n"
    finally:
        server.stop()


def test_ending_a_session_cancels_the_requests_waiting_for_their_turn():
    """DELETE stops the running execution and every request queued before it: none of them
    runs its code, so ending the session does not wait for them."""
    server = Server("--pool", "0")

    def send(session, code):
        body = json.dumps({"code_blocks": [{"language": "bash", "code": code}]}).encode()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(60)
        sock.connect(server.socket_path)
        sock.sendall(b"POST /v1/sessions/%s/execute HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: %d\r\n\r\n" % (session.encode(), len(body)) + body)
        return sock

    try:
        session = server.session()
        running = send(session, "sleep 2727.91")
        assert wait_until(lambda: processes_with(b"2727.91"), 30)
        waiting = send(session, "sleep 2727.92")
        # Queued behind the running one before DELETE asks for its turn.
        assert wait_until(lambda: server.request("GET", f"/v1/sessions/{session}")[1]["requests"] == 2, 30)
        started = time.monotonic()
        status, _, _ = server.request("DELETE", f"/v1/sessions/{session}")
        assert status == 200
        assert time.monotonic() - started < 20
        assert not processes_with(b"2727.91") and not processes_with(b"2727.92")
        answer = http.client.HTTPResponse(waiting)
        answer.begin()
        result = json.loads(answer.read())
        assert result["status"] == "cancelled" and "nothing was run" in result["notice"], result
        running.close()
        waiting.close()
    finally:
        server.stop()


def test_200_concurrent_requests_over_20_sessions_keep_their_results():
    server = Server("--pool", "2", "--max-sessions", "24")
    try:
        sessions = [server.session() for _ in range(20)]
        for index, session in enumerate(sessions):
            server.execute(session, f"mine = {index}")
        def one(n):
            index = n % 20
            result = server.execute(sessions[index], f"print(mine, {n})")
            return index, n, result["stdout"]
        with concurrent.futures.ThreadPoolExecutor(max_workers=40) as pool:
            results = list(pool.map(one, range(200)))
        assert len(results) == 200
        for index, n, stdout in results:
            assert stdout == f"{index} {n}\n"
    finally:
        assert server.stop() == 0


def test_sigterm_drains_running_executions_and_leaves_nothing():
    server = Server("--pool", "1")
    session = server.session()
    server.request("POST", f"/v1/sessions/{session}/exec", {"shell": "sleep 5151.5 & true"})
    finished = {}
    def slow():
        finished["result"] = server.execute(session, "import time; time.sleep(2); print('done')")
    worker = threading.Thread(target=slow)
    worker.start()
    time.sleep(0.5)
    server.process.send_signal(signal.SIGTERM)
    worker.join(60)
    assert finished["result"]["stdout"] == "done\n"
    assert server.process.wait(60) == 0
    assert not os.path.exists(server.socket_path)
    assert not processes_with(b"5151.5")
    assert not processes_with(server.socket_path.encode())
    server.stop()


def test_a_killed_server_takes_its_sandboxes_with_it():
    server = Server("--pool", "1")
    try:
        cold = server.session({"env": {"COLD": "1"}})
        warm = server.session()
        for session, marker in [(cold, "6161.5"), (warm, "6262.5")]:
            server.request("POST", f"/v1/sessions/{session}/exec", {"shell": f"sleep {marker} & true"})
            assert wait_until(lambda: processes_with(marker.encode()))  # the shell may exit first
    finally:
        pid = server.process.pid
        server.stop(signal.SIGKILL)  # also when a check above failed: no server is left behind
    assert wait_until(lambda: not processes_with(b"6161.5") and not processes_with(b"6262.5"), 10)
    # Its workspaces (the cold session's, the pool's) and cgroups stay until the next sbx on
    # this host reaps those of dead runners when it creates its own.
    def leftovers():
        found = glob.glob(f"/var/tmp/sbx/ws-{pid}-*")
        for depth in range(1, 5):  # cgroup v1 controllers, v2, and the parents sbx runs under
            found += glob.glob("/sys/fs/cgroup/" + "*/" * depth + f"sbx-{pid}-*")
        return found
    left = leftovers()
    assert any("/ws-" in path for path in left), "the control: a killed server cannot clean up"
    # Sweeps leave workspaces changed in the last minute alone (one being set up); age them.
    for path in glob.glob(f"/var/tmp/sbx/ws-{pid}-*"):
        os.utime(path, (time.time() - 120, time.time() - 120))
    successor = Server("--pool", "0")
    try:
        successor.execute(successor.session(), "1")
    finally:
        successor.stop()
    assert not leftovers()


@pytest.mark.parametrize("source", ["flag", "environment"])
def test_session_ids_carry_the_prefix_a_router_needs(source):
    # A router that hashes the part before "_" sends every request to the server holding it. A
    # pod learns its name from the environment (the Deployment's SBX_SESSION_PREFIX); a flag wins.
    if source == "flag":
        server = Server("--pool", "0", "--session-prefix", "sbx-5d8c7b9f6-x2x7q",
                        env={"SBX_SESSION_PREFIX": "overridden"})
    else:
        server = Server("--pool", "0", env={"SBX_SESSION_PREFIX": "sbx-5d8c7b9f6-x2x7q"})
    try:
        session = server.session()
        prefix, _, rest = session.partition("_")
        assert (prefix, rest[:2]) == ("sbx-5d8c7b9f6-x2x7q", "s-"), session
        assert server.execute(session, "print(6 * 7)")["output"] == "42\n"
        status, listed, _ = server.request("GET", "/v1/sessions")
        assert status == 200 and [s["id"] for s in listed["sessions"]] == [session]
        assert server.request("DELETE", f"/v1/sessions/{session}")[0] in (200, 204)
        assert server.request("GET", f"/v1/sessions/{session}")[0] == 404
    finally:
        assert server.stop() == 0


def test_a_bad_session_prefix_is_refused_before_anything_starts(tmp_path):
    socket_path = tmp_path / "run" / "sbx.sock"
    for prefix in ["", "Pod-A", "pod_a", "-pod", "pod.", "p" * 64, "pod/a"]:
        result = subprocess.run([SBX, "serve", "--listen", f"unix:{socket_path}",
                                 "--session-prefix", prefix],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 125, (prefix, result.stderr)
        assert "--session-prefix" in result.stderr and "a-z, 0-9" in result.stderr, result.stderr
        assert not socket_path.parent.exists(), "nothing is created before the refusal"
    result = subprocess.run([SBX, "serve", "--listen", f"unix:{socket_path}"],
                            env={"PATH": os.environ.get("PATH", ""), "SBX_SESSION_PREFIX": "$(POD_NAME)"},
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 125, result.stderr
    assert "SBX_SESSION_PREFIX '$(POD_NAME)'" in result.stderr, result.stderr
    assert not socket_path.parent.exists(), "nothing is created before the refusal"


DRIVER = str(ROOT / "rootfs" / "session_driver.py")
OUTER = ["--isolation", "outer", "--network", "host", "--pool", "0"]


def test_outer_sessions_run_the_containers_driver_as_uid_1000():
    """Isolation "outer" here on the host, as it would run in a gVisor or Kata container: each
    session runs --session-driver from this root file system as uid 1000."""
    server = Server(*OUTER, "--session-driver", DRIVER)
    try:
        status, health, _ = server.request("GET", "/v1/health")
        assert health["enforcement"]["mechanisms"]["isolation"] == "outer_runtime", health
        session = server.session({"files": [{"path": "in.txt", "content": "staged"}]})
        result = server.execute(session, "import os\nprint(os.getuid(), os.getgid(), open('in.txt').read())\n"
                                         "x = 41")
        assert result["stdout"] == "1000 1000 staged\n", result
        assert server.execute(session, "print(x + 1)")["stdout"] == "42\n"
        # The driver is root's: a session cannot change what the next one runs.
        result = server.execute(session, f"open({DRIVER!r}, 'a')")
        assert result["error"]["type"] == "PermissionError", result
        # Files the API writes belong to the session's user.
        status, _, _ = server.request("PUT", f"/v1/sessions/{session}/files/out/new.txt", b"put")
        assert status == 200
        result = server.execute(session, "open('out/new.txt', 'a').write('+'); print(open('out/new.txt').read())")
        assert result["stdout"] == "put+\n", result
        # The sessions of an outer server share uid 1000: one at a time unless asked.
        status, error, _ = server.request("POST", "/v1/sessions", {})
        assert (status, error["error"]["code"]) == (429, "limit"), error
        marker = b"sleep\x00" + b"4343.25"
        server.request("POST", f"/v1/sessions/{session}/exec", {"shell": "sleep 4343.25 & echo started"})
        assert wait_until(lambda: processes_with(marker))
        status, _, _ = server.request("DELETE", f"/v1/sessions/{session}")
        assert status == 200
        assert not processes_with(marker), "ending the session kills its whole tree"
    finally:
        assert server.stop() == 0


def test_an_outer_servers_driver_is_checked_before_anything_starts(tmp_path):
    socket_path = tmp_path / "run" / "sbx.sock"
    writable = tmp_path / "writable.py"
    shutil.copy(DRIVER, writable)
    os.chmod(writable, 0o666)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    shutil.copy(DRIVER, open_dir / "session_driver.py")
    cases = [(OUTER + ["--session-driver", str(tmp_path / "missing.py")], "missing.py"),
             (OUTER + ["--session-driver", "session_driver.py"], "give an absolute path"),
             (OUTER + ["--session-driver", str(writable)], "chmod go-w"),
             (OUTER + ["--session-driver", str(open_dir / "session_driver.py")],
              "writable by group or other (mode 0777)"),
             (["--session-driver", DRIVER], 'only isolation "outer" reads the driver')]
    if not os.path.exists("/usr/lib/sbx/session_driver.py"):  # the default, in a container
        cases.append((OUTER, "install sbx's session driver there"))
    for args, expect in cases:
        result = subprocess.run([SBX, "serve", "--listen", f"unix:{socket_path}", *args],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 125, (args, result.stderr)
        assert "--session-driver" in result.stderr and expect in result.stderr, (args, result.stderr)
        assert not socket_path.parent.exists(), "nothing is created before the refusal"


def test_a_server_started_under_umask_077_runs_its_sandboxes_with_022():
    """The caller's umask stays outside: with 077 the sandboxes' own mount points were 0700 and
    the server refused to start (its probe sandbox could not enter /workspace)."""
    strict = Server(umask=0o077)
    try:
        for pooled in (True, False):
            body = {} if pooled else {"policy": {"limits": {"memory": "256MiB"}}}
            status, session, _ = strict.request("POST", "/v1/sessions", body)
            assert status == 201 and session["pooled"] == pooled, session
            sid = session["id"]
            code = "import os\nopen('made.txt', 'w').write('x')\nprint(oct(os.umask(0o22)))"
            result = strict.execute(sid, code)
            assert (result["status"], result["stdout"]) == ("exited", "0o22\n"), result
            status, made, _ = strict.request("GET", f"/v1/sessions/{sid}/files/made.txt", raw=True)
            assert (status, made) == (200, b"x")
        status, run, _ = strict.request("POST", "/v1/run",
                                        {"argv": ["/bin/sh", "-c", "umask; stat -c %A /"]})
        assert status == 200, run
        assert run["stdout"] == "0022\ndrwxr-xr-x\n", run
    finally:
        assert strict.stop() == 0
