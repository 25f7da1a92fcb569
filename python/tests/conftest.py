"""Fixtures that run the real ``sbx serve`` binary ($SBX_BIN, default <repo>/build/sbx) on a
temporary Unix socket, or on TCP with a token, for the package's tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
sys.path.insert(0, PYTHON_DIR)

import sbx  # noqa: E402  (after the path is set, so the tests use this tree's package)
from sbx.local import stop_with_parent  # noqa: E402


@dataclass
class Server:
    """A running server: its address, token (or None) and process."""

    address: str
    token: object
    process: subprocess.Popen
    log_path: str

    def log(self) -> str:
        with open(self.log_path, "rb") as log:
            return log.read().decode("utf-8", "replace")


def sbx_binary() -> str:
    binary = os.environ.get("SBX_BIN") or os.path.join(REPO, "build", "sbx")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"sbx binary {binary} not found: build it (tools/build.sh) or set $SBX_BIN")
    return binary


def _start(directory: str, listen: str, address: str, *args: str) -> Server:
    """Starts ``sbx serve --listen LISTEN ARGS`` and waits until ``address`` answers."""
    log_fd, log_path = tempfile.mkstemp(suffix=".log", dir=directory)
    os.close(log_fd)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sbx_binary(), "serve", "--listen", listen, *args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=stop_with_parent,
        )
    token = None
    if "--token-file" in args:
        with open(args[args.index("--token-file") + 1]) as token_file:
            token = token_file.read().strip()
    server = Server(address, token, process, log_path)
    client = sbx.Client(address, token=token, timeout=5)
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            pytest.fail(f"sbx serve exited with {process.returncode}:\n{server.log()}")
        try:
            client.health()
            return server
        except sbx.ConnectionFailed:
            if time.monotonic() > deadline:
                _stop(server)
                pytest.fail(f"sbx serve did not answer in 30 s:\n{server.log()}")
            time.sleep(0.05)


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
        pytest.fail(f"sbx serve did not end within 30 s of SIGTERM:\n{server.log()}")


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """The server on a Unix socket in a private temp dir."""
    with tempfile.TemporaryDirectory(prefix="sbx-pytest-") as directory:
        address = f"unix:{directory}/sbx.sock"
        server = _start(directory, address, address)
        yield server
        _stop(server)


def _token_file(directory: str) -> str:
    fd, path = tempfile.mkstemp(prefix="token-", dir=directory)  # Mode 0600.
    with open(fd, "w") as token_file:
        token_file.write(os.urandom(16).hex() + "\n")
    return path


@pytest.fixture(scope="session")
def tcp_server() -> Iterator[Server]:
    """The server on 127.0.0.1 with a token file."""
    with tempfile.TemporaryDirectory(prefix="sbx-pytest-tcp-") as directory:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        server = _start(
            directory, f"tcp:127.0.0.1:{port}", f"http://127.0.0.1:{port}",
            "--token-file", _token_file(directory),
        )
        yield server
        _stop(server)


@pytest.fixture
def unix_server() -> Iterator[Callable[..., Server]]:
    """Starts servers on private Unix sockets with extra arguments (``token=True`` adds a token
    file); stops them after the test."""
    started = []
    with tempfile.TemporaryDirectory(prefix="sbx-pytest-extra-") as directory:

        def start(*args: str, token: bool = False) -> Server:
            path = os.path.join(directory, f"{len(started)}.sock")
            if token:
                args = (*args, "--token-file", _token_file(directory))
            started.append(_start(directory, f"unix:{path}", f"unix:{path}", *args))
            return started[-1]

        yield start
        for server in started:
            _stop(server)


@pytest.fixture
def client(server: Server) -> sbx.Client:
    return sbx.Client(server.address)


@pytest.fixture
def session(client: sbx.Client) -> Iterator[sbx.Session]:
    with client.session() as session:
        yield session
