"""The routes of docs/server-api.md against the real server: answers and error codes."""
import base64
import io
import os
import subprocess
import tarfile

from conftest import SBX, processes_with, wait_until


def test_health_reports_sessions_pool_and_enforcement(server):
    status, health, _ = server.request("GET", "/v1/health")
    assert status == 200
    assert health["status"] == "ok"
    assert health["sessions"]["max"] == 32
    assert health["pool"]["size"] == 1 and health["pool"]["warm"] in (0, 1)
    enforcement = health["enforcement"]
    names = {probe["name"] for probe in enforcement["host"]}
    assert {"user_namespaces", "seccomp"} <= names
    assert enforcement["network"] == "none"
    # Learnt from a real sandbox: this host's memory limit is a v1 or v2 cgroup.
    assert enforcement["cgroup"] in ("v1", "v2") and enforcement["seccomp"] is True
    assert enforcement["degraded"] == []
    assert enforcement["mechanisms"]["memory"] == "cgroup_" + enforcement["cgroup"]


def test_autogen_seed_task_and_state_across_executions(server):
    session = server.session()
    result = server.execute(session, "print(2**10)\nx = 41")
    assert result["exit_code"] == 0 and result["status"] == "exited"
    assert "1024" in result["output"]
    result = server.execute(session, "x + 1")
    assert result["value"] == "42"
    primes = ("ps = [n for n in range(2, 30) if all(n % d for d in range(2, n))][:10]\n"
              "open('primes.txt', 'w').write('\\n'.join(map(str, ps)))")
    result = server.execute(session, primes)
    assert result["files_changed"] == ["primes.txt"]
    status, body, _ = server.request("GET", f"/v1/sessions/{session}/files/primes.txt", raw=True)
    assert status == 200 and body.split(b"\n")[:3] == [b"2", b"3", b"5"] and body.endswith(b"29")


def test_python_error_has_type_and_traceback(server):
    result = server.execute(server.session(), "1 / 0")
    assert result["exit_code"] == 1
    assert result["error"]["type"] == "ZeroDivisionError"
    assert "Traceback" in result["error"]["traceback"]


def test_timeout_is_a_result_and_cannot_exceed_the_policy(server):
    session = server.session()
    result = server.execute(session, "import time; time.sleep(5)", timeout=0.5)
    assert result["status"] == "timed_out" and result["exit_code"] == 124
    status, error, _ = server.request("POST", f"/v1/sessions/{session}/execute",
                                      {"code_blocks": [{"language": "python", "code": "1"}],
                                       "timeout": 3600})
    assert status == 400 and error["error"]["code"] == "invalid"
    assert "timeout" in error["error"]["message"]


def test_figures_come_back_as_png(server):
    result = server.execute(server.session(),
                            "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    assert len(result["images"]) == 1
    png = base64.b64decode(result["images"][0]["png_base64"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_exec_argv_shell_stdin_and_missing_program(server):
    session = server.session()
    status, result, _ = server.request("POST", f"/v1/sessions/{session}/exec",
                                       {"argv": ["wc", "-c"], "stdin": "hello world"})
    assert status == 200 and result["stdout"].strip() == "11" and result["exit_code"] == 0
    data = bytes(range(256)) * 1000
    status, result, _ = server.request(
        "POST", f"/v1/sessions/{session}/exec",
        {"argv": ["sha256sum"], "stdin_base64": base64.b64encode(data).decode()})
    import hashlib
    assert result["stdout"].split()[0] == hashlib.sha256(data).hexdigest()
    status, result, _ = server.request("POST", f"/v1/sessions/{session}/exec",
                                       {"shell": "echo out; echo err >&2; exit 3"})
    assert (result["stdout"], result["stderr"], result["exit_code"]) == ("out\n", "err\n", 3)
    status, result, _ = server.request("POST", f"/v1/sessions/{session}/exec",
                                       {"argv": ["no-such-program-xyz"]})
    assert result["exit_code"] == 127
    # An argument is one argv element, whatever it holds: no shell sees it.
    status, result, _ = server.request("POST", f"/v1/sessions/{session}/exec",
                                       {"argv": ["echo", "$(id) ; '\"`"]})
    assert result["stdout"] == "$(id) ; '\"`\n"


def test_files_round_trip_and_staged_files(server):
    session = server.session({"files": [{"path": "in/data.csv", "content": "a,b\n1,2\n"},
                                        {"path": "run.sh", "content_base64":
                                         base64.b64encode(b"echo ran").decode(), "mode": "0755"}]})
    result = server.execute(session, "import pandas as pd\nprint(pd.read_csv('in/data.csv').a.sum())")
    assert result["stdout"] == "1\n"
    status, result, _ = server.request("POST", f"/v1/sessions/{session}/exec", {"argv": ["./run.sh"]})
    assert result["stdout"] == "ran\n"
    payload = os.urandom(100000)
    status, written, _ = server.request("PUT", f"/v1/sessions/{session}/files/out/x%20y.bin",
                                        payload, {"Content-Type": "application/octet-stream"})
    assert status == 200 and written == {"path": "out/x y.bin", "size": 100000}
    status, read, headers = server.request("GET", f"/v1/sessions/{session}/files/out/x%20y.bin",
                                           raw=True)
    assert status == 200 and read == payload
    result = server.execute(session, "import os; print(os.path.getsize('out/x y.bin'))")
    assert result["stdout"] == "100000\n"


def test_file_paths_never_leave_the_workspace(server):
    session = server.session()
    for path in ["..%2F..%2Fetc%2Fpasswd", "a/../../etc/passwd", "%2Fetc%2Fpasswd", "a%00b"]:
        status, error, _ = server.request("GET", f"/v1/sessions/{session}/files/{path}")
        assert (status, error["error"]["code"]) == (400, "invalid_path"), path
    # A symlink the sandbox made is never followed, to read or to write.
    server.request("POST", f"/v1/sessions/{session}/exec",
                   {"shell": "ln -s /etc/passwd link; mkdir d; ln -s /etc dirlink"})
    status, error, _ = server.request("GET", f"/v1/sessions/{session}/files/link")
    assert (status, error["error"]["code"]) == (404, "not_found")
    status, error, _ = server.request("GET", f"/v1/sessions/{session}/files/dirlink/passwd")
    assert status == 404
    before = open("/etc/passwd", "rb").read()
    status, error, _ = server.request("PUT", f"/v1/sessions/{session}/files/link", b"owned")
    assert (status, error["error"]["code"]) == (409, "conflict")
    status, error, _ = server.request("PUT", f"/v1/sessions/{session}/files/dirlink/x", b"owned")
    assert status == 409 and not os.path.exists("/etc/x")
    assert open("/etc/passwd", "rb").read() == before
    status, error, _ = server.request("GET", f"/v1/sessions/{session}/files/missing.txt")
    assert (status, error["error"]["code"]) == (404, "not_found")


def tar_of(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_workspace_archive_round_trip(server):
    source = server.session()
    server.execute(source, "import os\nos.makedirs('a/b')\nopen('a/b/c.txt','w').write('deep')\n"
                           "os.symlink('/etc/passwd', 'link')")
    status, archive, headers = server.request("GET", f"/v1/sessions/{source}/workspace", raw=True)
    assert status == 200 and headers["Content-Type"] == "application/x-tar"
    names = tarfile.open(fileobj=io.BytesIO(archive)).getnames()
    assert "a/b/c.txt" in names and "link" not in names
    target = server.session()
    status, body, _ = server.request("PUT", f"/v1/sessions/{target}/workspace", archive)
    assert status == 200, body
    assert server.execute(target, "print(open('a/b/c.txt').read())")["stdout"] == "deep\n"
    status, error, _ = server.request("PUT", f"/v1/sessions/{target}/workspace", archive)
    assert (status, error["error"]["code"]) == (409, "conflict")


def test_hostile_archives_write_nothing(server):
    session = server.session()
    for name in ["../escape.txt", "/abs.txt", "ok/../../x"]:
        archive = tar_of([("fine.txt", b"x"), (name, b"evil")])
        status, error, _ = server.request("PUT", f"/v1/sessions/{session}/workspace", archive)
        assert status == 400, (name, error)
    result = server.execute(session, "import os; print(sorted(os.listdir('.')))")
    assert result["stdout"] == "[]\n"


def test_restart_keeps_files_and_drops_variables(server):
    session = server.session()
    server.execute(session, "x = 1\nopen('kept.txt', 'w').write('yes')")
    status, body, _ = server.request("POST", f"/v1/sessions/{session}/restart")
    assert status == 200 and body["id"] == session
    result = server.execute(session, "print(open('kept.txt').read()); print('x' in globals())")
    assert result["stdout"] == "yes\nFalse\n"


def test_sessions_list_get_delete(server):
    session = server.session()
    status, listed, _ = server.request("GET", "/v1/sessions")
    assert session in [s["id"] for s in listed["sessions"]]
    status, one, _ = server.request("GET", f"/v1/sessions/{session}")
    assert status == 200 and one["id"] == session and one["network"] == "none"
    marker = b"sleep\x00" + b"4242.25"
    server.request("POST", f"/v1/sessions/{session}/exec", {"shell": "sleep 4242.25 & echo started"})
    # The shell may exit before its child has exec'd sleep.
    assert wait_until(lambda: processes_with(marker))
    status, ended, _ = server.request("DELETE", f"/v1/sessions/{session}")
    assert status == 200
    assert not processes_with(marker)
    for method, path in [("GET", ""), ("DELETE", ""), ("POST", "/execute"), ("GET", "/files/x")]:
        status, error, _ = server.request(method, f"/v1/sessions/{session}{path}",
                                          {"code_blocks": [{"language": "python", "code": "1"}]})
        assert (status, error["error"]["code"]) == (404, "not_found")


def test_bad_requests_name_the_field(server):
    session = server.session()
    cases = [
        ("POST", "/v1/sessions", {"bogus": 1}, 400, "bogus"),
        ("POST", "/v1/sessions", {"idle_timeout": "soon"}, 400, "idle_timeout"),
        ("POST", "/v1/sessions", {"files": [{"path": "../x", "content": ""}]}, 400, "../x"),
        ("POST", "/v1/sessions", {"env": {"1BAD": "x"}}, 400, "1BAD"),
        ("POST", "/v1/sessions", {"policy": {"limits": {"memory": "lots"}}}, 400, "memory"),
        ("POST", f"/v1/sessions/{session}/execute", {}, 400, "code_blocks"),
        ("POST", f"/v1/sessions/{session}/execute",
         {"code_blocks": [{"language": "python"}]}, 400, "code"),
        ("POST", f"/v1/sessions/{session}/exec", {"argv": []}, 400, "argv"),
        ("POST", f"/v1/sessions/{session}/exec", {"argv": ["a"], "shell": "b"}, 400, "argv"),
        ("POST", f"/v1/sessions/{session}/exec", {"argv": ["cat"], "stdin_base64": "!!"}, 400,
         "stdin_base64"),
    ]
    for method, path, body, want_status, word in cases:
        status, error, _ = server.request(method, path, body)
        assert status == want_status, (path, body, error)
        assert error["error"]["code"] == "invalid" or error["error"]["code"] == "invalid_path"
        assert word in error["error"]["message"], (body, error)
    status, error, _ = server.request("POST", "/v1/sessions", b"{not json")
    assert (status, error["error"]["code"]) == (400, "invalid")
    status, error, _ = server.request("POST", "/v1/sessions", b"[" * 100 + b"]" * 100)
    assert status == 400 and "nests deeper" in error["error"]["message"]
    status, error, _ = server.request("GET", "/v2/anything")
    assert (status, error["error"]["code"]) == (404, "not_found")
    status, error, _ = server.request("PUT", "/v1/health")
    assert (status, error["error"]["code"]) == (405, "method_not_allowed")
    # An unknown language is a result that ran nothing, not a transport error.
    result = server.execute(session, "echo hi", language="cobol")
    assert result["rejected"] and result["blocks_run"] == 0


def test_inline_policy_may_only_tighten(server):
    status, error, _ = server.request("POST", "/v1/sessions", {"policy": {"limits": {"memory": "4G"}}})
    assert (status, error["error"]["code"]) == (403, "permission_denied")
    assert "limits.memory" in error["error"]["message"]
    status, error, _ = server.request("POST", "/v1/sessions", {"policy": {"network": "host"}})
    assert (status, error["error"]["code"]) == (403, "permission_denied")
    session = server.session({"policy": {"limits": {"memory": "64M"}}})
    result = server.execute(session, "x = bytearray(200 * 1024 * 1024)")
    assert result["status"] == "oom_killed" or "MemoryError" in (result["error"] or {}).get("type", "")
    # The same allocation fits the server's own 512M limit.
    result = server.execute(server.session(), "x = bytearray(200 * 1024 * 1024); print('ok')")
    assert result["stdout"] == "ok\n"


def test_env_reaches_the_sandbox_and_the_servers_does_not(server):
    """The fixture starts the server with SBX_TEST_HOST_SECRET set."""
    session = server.session({"env": {"GREETING": "hello"}})
    result = server.execute(session, "import os; print(os.environ.get('GREETING'), "
                                     "os.environ.get('SBX_TEST_HOST_SECRET'))")
    assert result["stdout"] == "hello None\n"


def test_metrics_count_requests_and_executions(server):
    server.execute(server.session(), "1")
    status, text, headers = server.request("GET", "/metrics", raw=True)
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    text = text.decode()
    assert 'sbx_executions_total{status="exited"}' in text
    assert "sbx_execution_seconds_count" in text and "sbx_sessions_active" in text


def test_unknown_routes_under_a_session_are_404(server):
    session = server.session()
    for method, path in [("GET", "/nothing-here"), ("POST", "/execute/more"), ("GET", "/files")]:
        status, error, _ = server.request(method, f"/v1/sessions/{session}{path}")
        assert (status, error["error"]["code"]) == (404, "not_found"), path
    status, error, _ = server.request("GET", f"/v1/sessions/{session}/execute")
    assert (status, error["error"]["code"]) == (405, "method_not_allowed")


def test_delete_a_file_never_what_a_symlink_points_to(server):
    session = server.session({"files": [{"path": "a/b.txt", "content": "x"}]})
    status, body, _ = server.request("DELETE", f"/v1/sessions/{session}/files/a/b.txt")
    assert status == 200 and body == {"path": "a/b.txt", "removed": True}
    status, error, _ = server.request("DELETE", f"/v1/sessions/{session}/files/a/b.txt")
    assert status == 404
    status, error, _ = server.request("DELETE", f"/v1/sessions/{session}/files/a")
    assert (status, error["error"]["code"]) == (409, "conflict")
    target = "/var/tmp/sbx-server-test-victim"
    with open(target, "w") as f:
        f.write("keep")
    try:
        server.request("POST", f"/v1/sessions/{session}/exec", {"argv": ["ln", "-s", target, "l"]})
        status, _, _ = server.request("DELETE", f"/v1/sessions/{session}/files/l")
        assert status == 200 and open(target).read() == "keep"
        result = server.execute(session, "import os; print(os.path.lexists('l'))")
        assert result["stdout"] == "False\n"
    finally:
        os.unlink(target)


def test_one_shot_run_is_sbx_run_json(server):
    status, result, _ = server.request("POST", "/v1/run", {"argv": ["sh", "-c", "cat; exit 7"],
                                                           "stdin": "piped"})
    assert status == 200, result
    assert (result["status"], result["exit_code"], result["stdout"]) == ("exited", 7, "piped")
    assert result["enforcement"]["seccomp"] == "seccomp_bpf"
    assert result["enforcement"]["network"] == "network_namespace"
    status, result, _ = server.request("POST", "/v1/run", {"argv": ["sleep", "5"], "timeout": 0.5})
    assert result["status"] == "timed_out"
    status, result, _ = server.request("POST", "/v1/run", {"argv": ["sh", "-c", "cat /proc/self/status"],
                                                           "policy": {"limits": {"pids": 8}}})
    assert status == 200 and result["exit_code"] == 0
    status, error, _ = server.request("POST", "/v1/run", {"argv": ["true"], "policy": {"limits": {"pids": 100000}}})
    assert status in (400, 403)
    status, error, _ = server.request("POST", "/v1/run", {"argv": []})
    assert (status, error["error"]["code"]) == (400, "invalid")


def sklearn_variant_exists():
    return subprocess.run([SBX, "image", "path", "sklearn"], capture_output=True).returncode == 0


def test_a_sessions_policy_picks_an_image_variant(server):
    """The policy's "image" names a variant (tools/test.sh builds sklearn before this suite)."""
    assert sklearn_variant_exists(), "build it: sbx image build --name sklearn --add python3-sklearn"
    status, created, _ = server.request("POST", "/v1/sessions", {"policy": {"image": "sklearn"}})
    assert status == 201, created
    assert (created["image"], created["pooled"]) == ("sklearn", False)
    result = server.execute(created["id"], "import sklearn; print(sklearn.__name__)")
    assert result["stdout"] == "sklearn\n", result
    # The control: the server's own image (the default) lacks it.
    status, plain, _ = server.request("POST", "/v1/sessions", {})
    assert status == 201 and plain["image"] is None
    result = server.execute(plain["id"], "import sklearn")
    assert result["error"]["type"] == "ModuleNotFoundError", result
    status, result, _ = server.request("POST", "/v1/run", {"argv": ["python3", "-c", "import sklearn"],
                                                           "policy": {"image": "sklearn"}})
    assert (status, result["exit_code"]) == (200, 0), result
    # Names only, and only ones the cache has; nothing is created for a refused request.
    before = len(server.request("GET", "/v1/sessions")[1]["sessions"])
    for image, expect in (("no-such-variant", "no image named 'no-such-variant'"),
                          ("./rootfs", "1-32 of a-z"), ("/", "1-32 of a-z")):
        status, error, _ = server.request("POST", "/v1/sessions", {"policy": {"image": image}})
        assert (status, error["error"]["code"]) == (400, "invalid"), error
        assert "image" in error["error"]["message"] and expect in error["error"]["message"], error
    assert len(server.request("GET", "/v1/sessions")[1]["sessions"]) == before
