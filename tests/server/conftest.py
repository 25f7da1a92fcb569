"""Starts the real `sbx serve` for the server's tests and talks raw HTTP/1.1 to it.

The tests use only the standard library (http.client over a Unix or TCP socket), so what they
check is the wire protocol of docs/server-api.md, not a client library's view of it.
"""
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SBX = os.environ.get("SBX_BIN", str(ROOT / "build" / "sbx"))
TOKEN = "test-token-0123456789abcdef"


class UnixConnection(http.client.HTTPConnection):
    """http.client over an AF_UNIX stream socket."""

    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Server:
    """One `sbx serve` process on a private socket; stopped (SIGTERM) by stop()."""

    def __init__(self, *args, tcp=False, env=None, umask=-1):
        self.dir = tempfile.mkdtemp(prefix="sbx-server-test-")
        self.socket_path = os.path.join(self.dir, "run", "sbx.sock")
        argv = [SBX, "serve", "--listen", "unix:" + self.socket_path]
        self.token = None
        if tcp:
            token_file = os.path.join(self.dir, "token")
            with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(TOKEN + "\n")
            argv += ["--listen", "tcp:127.0.0.1:0", "--token-file", token_file]
            self.token = TOKEN
        argv += list(args)
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, umask=umask,
                                        env={"PATH": os.environ.get("PATH", ""),
                                             "SBX_TEST_HOST_SECRET": "host-secret",
                                             **(env or {})})
        self.tcp_port = None
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop(signal.SIGKILL)
            raise

    def _wait_until_ready(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("sbx serve exited: " + self.process.stderr.read())
            if line.startswith("sbx serve: listening on tcp:"):
                self.tcp_port = int(line.rsplit(":", 1)[1])
            if line.startswith("sbx serve: ready"):
                return
        raise RuntimeError("sbx serve did not become ready in 60 s")

    def connection(self, timeout=120):
        return UnixConnection(self.socket_path, timeout)

    def request(self, method, path, body=None, headers=None, raw=False, timeout=120):
        """Returns (status, parsed JSON or bytes, response headers)."""
        headers = dict(headers or {})
        if self.token and "X-Sbx-Token" not in headers and "Authorization" not in headers:
            headers["X-Sbx-Token"] = self.token
        data = body
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        connection = self.connection(timeout)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            content_type = response.getheader("Content-Type", "")
            if not raw and content_type.startswith("application/json"):
                payload = json.loads(payload)
            return response.status, payload, dict(response.getheaders())
        finally:
            connection.close()

    def session(self, body=None):
        status, created, _ = self.request("POST", "/v1/sessions", body or {})
        assert status == 201, created
        return created["id"]

    def execute(self, session_id, code, language="python", **extra):
        body = {"code_blocks": [{"language": language, "code": code}], **extra}
        status, result, _ = self.request("POST", f"/v1/sessions/{session_id}/execute", body)
        assert status == 200, result
        return result

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Stops the server and removes its private directory (socket, token)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise
        finally:
            if self.process.poll() is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
        return self.process.returncode


@pytest.fixture(scope="module")
def server():
    """A server shared by a module's tests: a cold start per session, one warm."""
    running = Server("--pool", "1")
    yield running
    running.stop()


def processes_with(marker):
    """Host pids whose command line contains `marker` (bytes)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
