"""sbx.Client against the real server: every route, the error codes, files, tars, auth."""

from __future__ import annotations

import base64
import http.client
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time

import pytest

import sbx


def make_tar(members: dict[str, bytes], links: dict[str, str] = {}) -> bytes:
    """A tar of regular files (and symlinks) with the given names."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return out.getvalue()


def raw(server, method: str, path: str, body: bytes = b"", headers: dict = {}):
    """One request with exactly the given headers: (status, parsed JSON or bytes)."""
    if server.address.startswith("unix:"):
        from sbx.transport import _UnixConnection

        connection = _UnixConnection(server.address[len("unix:"):], 10)
    else:
        host, port = server.address[len("http://"):].split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request(method, path, body=body or None, headers=headers)
    answer = connection.getresponse()
    data = answer.read()
    connection.close()
    try:
        return answer.status, json.loads(data)
    except ValueError:
        return answer.status, data


# --- health, metrics, sessions ---------------------------------------------------------------


def test_health_reports_status_sessions_and_enforcement(client):
    health = client.health()
    assert health["status"] == "ok"
    assert health["version"]
    assert {"active", "max"} <= set(health["sessions"])
    assert {"size", "warm"} <= set(health["pool"])
    assert "degraded" in health["enforcement"]


def test_metrics_count_sessions_and_executions(client):
    with client.session() as session:
        session.execute("pass")
    metrics = client.metrics()
    assert "sbx_sessions_active" in metrics
    assert "sbx_sessions_created_total" in metrics
    assert 'sbx_executions_total{status="exited"}' in metrics
    assert "sbx_execution_seconds_bucket" in metrics
    assert "sbx_http_requests_total" in metrics


def test_session_is_created_listed_fetched_and_deleted(client):
    session = client.create_session(idle_timeout=120)
    assert session.id.startswith("s-")
    assert session.info.idle_timeout == 120
    assert session.id in [s.id for s in client.sessions()]
    assert client.get_session(session.id).id == session.id
    session.close()
    with pytest.raises(sbx.NotFound) as error:
        client.get_session(session.id)
    assert error.value.status == 404 and error.value.code == "not_found"
    assert session.id not in [s.id for s in client.sessions()]
    session.close()  # Closing twice is harmless.


def test_session_files_and_env_are_staged(client):
    files = {"data.csv": "a,b\n1,2\n", "bin/blob": bytes(range(256))}
    with client.session(files=files, env={"SBX_TEST_NAME": "value 1"}) as session:
        assert session.read_file("data.csv") == b"a,b\n1,2\n"
        assert session.read_file("bin/blob") == bytes(range(256))
        assert session.exec(shell="echo $SBX_TEST_NAME").stdout == "value 1\n"


# --- execute ---------------------------------------------------------------------------------


def test_execute_returns_output_and_keeps_state(session):
    result = session.execute("x = 2**10\nprint(x)")
    assert (result.status, result.exit_code) == ("exited", 0)
    assert "1024" in result.stdout and "1024" in result.output
    assert session.execute("print(x + 1)").stdout.strip() == "1025"
    assert session.refresh().executions >= 2


def test_execute_returns_a_trailing_value_and_figures(session):
    result = session.execute("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\n6 * 7")
    assert result.exit_code == 0, result.output
    assert "42" in str(result.value)
    assert result.images
    assert base64.b64decode(result.images[0].png_base64).startswith(b"\x89PNG\r\n\x1a\n")


def test_concurrent_requests_to_one_session_are_neither_lost_nor_mixed(session):
    results = {}

    def run(n: int) -> None:
        results[n] = session.execute(f"import time\ntime.sleep(0.1)\nprint('run', {n})")

    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {n: r.stdout for n, r in results.items()} == {n: f"run {n}\n" for n in range(6)}


def test_execute_failure_is_a_result_with_the_error(session):
    result = session.execute([
        {"language": "python", "code": "1 / 0"},
        {"language": "python", "code": "print('not reached')"},
    ])
    assert result.exit_code != 0
    assert result.error is not None and result.error.type == "ZeroDivisionError"
    assert "not reached" not in result.output
    assert result.blocks_run == 1


def test_execute_runs_shell_blocks_and_pairs(session):
    result = session.execute([("bash", "echo from-bash"), ("python", "print('from-python')")])
    assert result.exit_code == 0
    assert "from-bash" in result.output and "from-python" in result.output


def test_execute_timeout_ends_the_execution(session):
    started = time.monotonic()
    result = session.execute("import time\ntime.sleep(30)", timeout=1)
    assert result.status == "timed_out"
    assert time.monotonic() - started < 20
    assert session.execute("print('alive')").stdout.strip() == "alive"


def test_cancelling_an_execution_stops_it_and_the_session_goes_on(session):
    cancel = sbx.Cancellation()
    threading.Timer(1.0, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(sbx.Cancelled):
        code = "import time\ntime.sleep(30)\nopen('late.txt', 'w').write('x')"
        session.execute(code, cancel=cancel)
    assert time.monotonic() - started < 10
    result = session.execute("print('after')")
    assert result.stdout.strip() == "after"
    # The fresh interpreter's result says why (docs/server-api.md: state_lost belongs to the
    # cancelled execution's own result, which a cancelled client never reads).
    assert "cancelled" in result.notice and not result.state_lost
    time.sleep(1)
    with pytest.raises(sbx.NotFound):
        session.read_file("late.txt")  # The cancelled code did not run on.


def test_execute_streams_output_to_on_output_as_it_is_written(session):
    seen = []

    def on_output(stream: str, text: str) -> None:
        seen.append((time.monotonic(), stream, text))

    code = "import sys, time\nprint('one', flush=True)\ntime.sleep(2)\nsys.stderr.write('two\\n')"
    result = session.execute(code, on_output=on_output)
    done = time.monotonic()
    assert result.exit_code == 0 and result.stdout == "one\n" and result.stderr == "two\n"
    # Pieces come as the code writes them (print writes "one" and "\n" apart), in order.
    assert "".join(t for _, s, t in seen) == "one\ntwo\n"
    assert "".join(t for _, s, t in seen if s == "stdout") == "one\n"
    assert done - seen[0][0] >= 1.5, "the first print came only with the result"
    seen.clear()
    assert session.exec(shell="echo a; echo b >&2", on_output=lambda s, t: seen.append((0, s, t))
                        ).stdout == "a\n"
    assert {s: "".join(t for _, s2, t in seen if s2 == s) for s in ("stdout", "stderr")} == {
        "stdout": "a\n", "stderr": "b\n"}


def test_execute_events_yield_output_then_the_result(session):
    events = list(session.execute_events("print('ev')"))
    assert "".join(e["text"] for e in events if e["type"] == "stdout") == "ev\n"
    assert [e["type"] for e in events].count("result") == 1
    assert events[-1]["type"] == "result" and events[-1]["result"]["stdout"] == "ev\n"


def test_an_on_output_that_raises_cancels_the_execution(session):
    session.execute("z = 1")

    def stop(stream: str, text: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        session.execute("print('go', flush=True)\nimport time\ntime.sleep(30)", on_output=stop)
    started = time.monotonic()
    result = session.execute("print('z' in globals())")
    assert time.monotonic() - started < 15
    assert result.stdout == "False\n" and "cancelled" in result.notice


def test_restart_gives_a_fresh_interpreter_and_keeps_files(session):
    session.execute("y = 7\nopen('kept.txt', 'w').write('kept')")
    session.restart()
    assert session.execute("print(y)").error.type == "NameError"
    assert session.read_file("kept.txt") == b"kept"


# --- exec ------------------------------------------------------------------------------------


def test_exec_argv_shell_and_stdin(session):
    result = session.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert session.exec(shell="echo a b | wc -w").stdout.strip() == "2"
    assert session.exec(["cat"], stdin="typed input").stdout == "typed input"
    for data in (b"\x00\xff\x01", b"\x00\xff", b"\xfb"):  # Base64 with 0, 2 and 1 "=".
        assert session.exec(["od", "-An", "-tx1"], stdin=data).stdout.split() == [
            f"{byte:02x}" for byte in data]


def test_exec_missing_program_is_127_and_timeout_124(session):
    assert session.exec(["no-such-program-sbx"]).exit_code == 127
    assert session.exec(["sleep", "30"], timeout=1).exit_code == 124


def test_exec_needs_argv_or_shell(session):
    with pytest.raises(ValueError):
        session.exec()


# --- files and workspace ---------------------------------------------------------------------


def test_files_round_trip_bytes_and_nested_paths(session):
    data = os.urandom(100_000)
    assert session.write_file("deep/er/blob.bin", data) == {"path": "deep/er/blob.bin",
                                                            "size": len(data)}
    assert session.read_file("deep/er/blob.bin") == data
    assert session.exec(["sha256sum", "deep/er/blob.bin"]).exit_code == 0
    session.write_file("name with space.txt", "text")
    assert session.read_file("name with space.txt") == b"text"


def test_file_errors(session):
    with pytest.raises(sbx.NotFound):
        session.read_file("missing.txt")
    for path in ("../outside", "a/../../outside", "/etc/passwd"):
        with pytest.raises(sbx.InvalidPath) as error:
            session.read_file(path)
        assert error.value.status == 400
    session.exec(["ln", "-s", "/etc/passwd", "link"])
    assert session.exec(["test", "-L", "link"]).exit_code == 0
    with pytest.raises(sbx.NotFound):
        session.read_file("link")  # A symlink is never followed.


def test_workspace_tar_round_trip(client, session):
    session.write_file("a.txt", "alpha")
    session.write_file("dir/b.bin", b"\x00beta")
    archive = session.persist_workspace()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        names = set(tar.getnames())
    assert {"a.txt", "dir/b.bin"} <= {n.removeprefix("./") for n in names}
    assert not any(n.startswith("/") or ".." in n.split("/") for n in names)
    with client.session() as other:
        other.hydrate_workspace(io.BytesIO(archive))
        assert other.read_file("a.txt") == b"alpha"
        assert other.read_file("dir/b.bin") == b"\x00beta"
        with pytest.raises(sbx.Conflict):
            other.hydrate_workspace(archive)


@pytest.mark.parametrize("archive", [
    make_tar({"../escape.txt": b"x"}),
    make_tar({"/abs.txt": b"x"}),
    make_tar({}, links={"link": "/etc/passwd"}),
])
def test_workspace_hydrate_rejects_unsafe_members(session, archive):
    with pytest.raises(sbx.InvalidRequest) as error:
        session.hydrate_workspace(archive)
    assert error.value.status == 400
    assert session.exec(["ls", "-A"]).stdout == ""  # Nothing was written.


# --- errors and auth -------------------------------------------------------------------------


def test_unknown_session_route_and_method(client, server):
    with pytest.raises(sbx.NotFound):
        client.get_session("s-0000000000000000")
    with pytest.raises(sbx.NotFound):
        client._transport.request("GET", "/v1/nothing-here")
    with pytest.raises(sbx.MethodNotAllowed) as error:
        client._transport.request("DELETE", "/v1/health")
    assert error.value.status == 405


def test_invalid_requests_name_the_field(client):
    for body, field in ((b'{"bogus": 1}', "bogus"), (b'{"idle_timeout": "soon"}', "idle_timeout")):
        with pytest.raises(sbx.InvalidRequest) as error:
            client._transport.request("POST", "/v1/sessions", body)
        assert error.value.code == "invalid" and error.value.status == 400
        assert field in error.value.message
    with pytest.raises(sbx.InvalidRequest):
        client._transport.request("POST", "/v1/sessions", b"{not json")


def test_policies_may_only_tighten_the_servers(client):
    with pytest.raises(sbx.PermissionDenied) as error:
        client.create_session(policy={"limits": {"memory": "4G"}})
    assert error.value.status == 403 and "limits.memory" in error.value.message
    with client.session(policy={"limits": {"memory": "256M"}}) as session:
        assert session.execute("print('tight')").stdout.strip() == "tight"


def test_a_session_runs_on_the_image_variant_it_names(client):
    """tools/test.sh builds the sklearn variant before this suite."""
    with client.session(image="sklearn") as session:
        assert session.info.image == "sklearn"
        assert session.execute("import sklearn; print('found')").stdout == "found\n"
    with client.session() as session:  # The control: the server's default image lacks it.
        assert session.info.image is None
        assert session.execute("import sklearn").error.type == "ModuleNotFoundError"
    with pytest.raises(sbx.InvalidRequest) as error:
        client.create_session(image="no-such-variant")
    assert "policy.image" in error.value.message and "no image named" in error.value.message
    with pytest.raises(ValueError):
        client.create_session(image="sklearn", policy_name="strict")


def test_max_sessions_is_429_with_retry_after(unix_server):
    client = sbx.Client(unix_server("--max-sessions", "1", "--pool", "0").address)
    with client.session():
        with pytest.raises(sbx.LimitReached) as error:
            client.create_session()
        assert (error.value.status, error.value.code) == (429, "limit")
        assert error.value.retry_after is not None and error.value.retry_after > 0
    client.create_session().close()  # The slot is free again.


def test_unknown_session_subroute_is_404(session):
    with pytest.raises(sbx.NotFound):
        session.client._transport.request("GET", f"/v1/sessions/{session.id}/nothing-here")


def test_oversized_head_is_413(server):
    status, answer = raw(server, "GET", "/v1/health", headers={"X-Big": "a" * 20_000})
    assert (status, answer["error"]["code"]) == (413, "too_large")


def test_oversized_json_body_is_413(client):
    with pytest.raises(sbx.TooLarge) as error:
        client.create_session(files={"big.txt": "x" * (65 << 20)})
    assert (error.value.status, error.value.code) == (413, "too_large")


def test_tcp_needs_the_token(tcp_server):
    assert sbx.Client(tcp_server.address, token=tcp_server.token).health()["status"] == "ok"
    for token in (None, "wrong-token"):
        with pytest.raises(sbx.Unauthorized) as error:
            sbx.Client(tcp_server.address, token=token).health()
        assert (error.value.status, error.value.code) == (401, "unauthorized")
    for header in ({"Authorization": f"Bearer {tcp_server.token}"},
                   {"X-Sbx-Token": tcp_server.token}):
        assert raw(tcp_server, "GET", "/v1/health", headers=header)[0] == 200


def test_a_token_file_guards_the_unix_socket_too(unix_server):
    server = unix_server(token=True)
    with pytest.raises(sbx.Unauthorized):
        sbx.Client(server.address).health()
    assert sbx.Client(server.address, token=server.token).health()["status"] == "ok"


def test_a_second_server_on_a_live_socket_is_refused_and_harmless(unix_server):
    from conftest import sbx_binary

    first = unix_server()
    second = subprocess.run([sbx_binary(), "serve", "--listen", first.address],
                            capture_output=True, text=True, timeout=60)
    assert second.returncode != 0 and "another server" in second.stderr
    assert sbx.Client(first.address).health()["status"] == "ok"


def test_unix_socket_is_private(server):
    path = server.address[len("unix:"):]
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_tcp_session_works_end_to_end(tcp_server):
    client = sbx.Client(tcp_server.address, token=tcp_server.token)
    with client.session() as session:
        assert session.execute("print(6 * 7)").stdout.strip() == "42"


# --- addresses and the local server ----------------------------------------------------------


def test_default_address_comes_from_sbx_url(server, monkeypatch):
    monkeypatch.setenv("SBX_URL", server.address)
    assert sbx.Client().health()["status"] == "ok"
    monkeypatch.delenv("SBX_URL")
    assert str(sbx.Client().address) == (
        "unix:/run/sbx/sbx.sock" if os.geteuid() == 0
        else f"unix:{os.environ.get('XDG_RUNTIME_DIR')}/sbx.sock"
    )


def test_bad_addresses_are_refused():
    for address in ("tcp:1.2.3.4:5", "unix:", "ftp://host:1"):
        with pytest.raises(sbx.SbxError) as error:
            sbx.Client(address)
        assert address in error.value.message


def test_unreachable_server_is_connection_failed(tmp_path):
    with pytest.raises(sbx.ConnectionFailed):
        sbx.Client(f"unix:{tmp_path}/none.sock").health()


def test_local_starts_a_private_server_and_stops_it():
    from conftest import sbx_binary

    client = sbx.Client.local(sbx_binary())
    server = client._server
    directory = os.path.dirname(str(client.address)[len("unix:"):])
    assert os.stat(directory).st_mode & 0o777 == 0o700
    with client, client.session() as session:
        assert session.execute("print(2**10)").stdout.strip() == "1024"
    assert server.process.returncode is not None
    assert not os.path.exists(directory)


def test_local_server_ends_when_its_parent_is_killed(tmp_path):
    from conftest import PYTHON_DIR, sbx_binary

    script = ("import os, sbx\nclient = sbx.Client.local(%r)\n"
              "print(client._server.process.pid, client._server.directory, flush=True)\n"
              "os.kill(os.getpid(), 9)\n" % sbx_binary())
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=PYTHON_DIR), timeout=60)
    pid, directory = done.stdout.split()
    deadline = time.monotonic() + 35
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = os.path.exists(f"/proc/{pid}") and "sbx" in open(f"/proc/{pid}/cmdline").read()
    if alive:
        os.kill(int(pid), 15)
    shutil.rmtree(directory, ignore_errors=True)  # The killed parent could not remove it.
    assert not alive


def test_error_classes_follow_the_codes():
    from sbx.errors import error_from_response

    assert isinstance(error_from_response(400, "invalid_path", "m"), sbx.InvalidRequest)
    assert type(error_from_response(429, "limit", "m")) is sbx.LimitReached
    assert type(error_from_response(418, "brand_new", "m")) is sbx.SbxError
