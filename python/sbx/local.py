"""A private ``sbx serve`` child for Client.local(): started on a socket in a 0700 temp dir."""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import shutil
import subprocess
import tempfile
import time
from typing import Optional, Sequence

from .errors import ConnectionFailed, SbxError
from .transport import Address, Transport

_START_SECONDS = 30.0
_STOP_SECONDS = 30.0
_PR_SET_PDEATHSIG = 1


def stop_with_parent() -> None:
    """In a child between fork and exec: SIGTERM it when its parent dies, so a server started
    by a process that is killed (atexit never runs) still drains and ends."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # Not Linux: the server then outlives a killed parent.


def find_sbx_binary(sbx_binary: Optional[str] = None) -> str:
    """The sbx binary: the argument, else ``$SBX_BIN``, else ``sbx`` on PATH."""
    candidate = sbx_binary or os.environ.get("SBX_BIN") or shutil.which("sbx")
    if not candidate or not os.access(candidate, os.X_OK):
        raise SbxError(
            "invalid",
            f"sbx binary {candidate or 'sbx'!r} not found or not executable: pass "
            "sbx_binary=, set $SBX_BIN, or put sbx on PATH",
        )
    return candidate


class LocalServer:
    """``sbx serve`` running as this process's child, stopped by stop() or at exit."""

    def __init__(self, process: subprocess.Popen, directory: str, address: str) -> None:
        self.process = process
        self.directory = directory
        self.address = address
        atexit.register(self.stop)

    @classmethod
    def start(
        cls, sbx_binary: Optional[str] = None, extra_args: Sequence[str] = ()
    ) -> "LocalServer":
        """Starts the server and waits until it answers ``GET /v1/health``."""
        binary = find_sbx_binary(sbx_binary)
        directory = tempfile.mkdtemp(prefix="sbx-local-")  # mkdtemp creates it 0700.
        address = f"unix:{directory}/sbx.sock"
        log = open(os.path.join(directory, "server.log"), "wb")
        with log:
            process = subprocess.Popen(
                [binary, "serve", "--listen", address, *extra_args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=stop_with_parent,
            )
        server = cls(process, directory, address)
        server._wait_until_ready()
        return server

    def log(self) -> str:
        """What the server printed so far."""
        try:
            with open(os.path.join(self.directory, "server.log"), "rb") as log:
                return log.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _wait_until_ready(self) -> None:
        transport = Transport(Address.parse(self.address), None, 5.0)
        deadline = time.monotonic() + _START_SECONDS
        while True:
            if self.process.poll() is not None:
                log = self.log()
                self.stop()
                raise SbxError(
                    "unavailable",
                    f"sbx serve exited with {self.process.returncode} before answering: {log}",
                )
            try:
                transport.request("GET", "/v1/health")
                return
            except ConnectionFailed:
                if time.monotonic() > deadline:
                    log = self.log()
                    self.stop()
                    raise SbxError(
                        "unavailable", f"sbx serve did not answer in {_START_SECONDS:.0f} s: {log}"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM (the server drains and closes every session), SIGKILL if it does not end."""
        atexit.unregister(self.stop)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)
