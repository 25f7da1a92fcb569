"""HTTP/1.1 requests to an sbx server over a Unix socket or TCP, with cancellation."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from .errors import Cancelled, ConnectionFailed, LimitReached, SbxError, error_from_response

# The code an error answer without a JSON body gets, by HTTP status.
_CODE_BY_STATUS = {
    400: "invalid",
    401: "unauthorized",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    429: "limit",
    503: "unavailable",
}


def default_address() -> str:
    """``$SBX_URL`` if set, else the server's default socket for this user."""
    url = os.environ.get("SBX_URL")
    if url:
        return url
    if os.geteuid() == 0:
        return "unix:/run/sbx/sbx.sock"
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime_dir:
        raise SbxError(
            "invalid",
            "no server address: set $SBX_URL (unix:PATH or http://HOST:PORT), pass one to "
            "sbx.Client, or set $XDG_RUNTIME_DIR to find the default socket",
        )
    return f"unix:{runtime_dir}/sbx.sock"


@dataclass(frozen=True)
class Address:
    """Where a server listens: a Unix socket path, or a scheme, host, port and path prefix."""

    scheme: str  # "unix", "http" or "https"
    socket_path: str = ""
    host: str = ""
    port: int = 0
    prefix: str = ""  # Prepended to every route, e.g. "/sbx" behind a router.

    @classmethod
    def parse(cls, text: str) -> "Address":
        if text.startswith("unix:"):
            path = text[len("unix:") :]
            if not path:
                raise SbxError("invalid", f"address {text!r}: expected unix:PATH with a path")
            return cls("unix", path)
        url = urllib.parse.urlsplit(text)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise SbxError(
                "invalid",
                f"address {text!r}: expected unix:PATH, http://HOST:PORT or https://HOST:PORT",
            )
        port = url.port or (443 if url.scheme == "https" else 80)
        return cls(url.scheme, "", url.hostname, port, url.path.rstrip("/"))

    def __str__(self) -> str:
        if self.scheme == "unix":
            return f"unix:{self.socket_path}"
        return f"{self.scheme}://{self.host}:{self.port}{self.prefix}"


class _UnixConnection(http.client.HTTPConnection):
    """An HTTPConnection whose connect() opens an AF_UNIX socket."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Cancellation:
    """Cancels a request running in another thread by shutting down its connection.

    The server treats a client that goes away during an execution as a cancellation: it stops
    the session's processes, and the session's next execution starts a fresh interpreter.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: Optional[socket.socket] = None
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._sock is not None:
                try:
                    # shutdown(), unlike close(), wakes a recv() blocked in another thread.
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _attach(self, sock: Optional[socket.socket]) -> None:
        with self._lock:
            if self._cancelled:
                raise Cancelled("cancelled", "the request was cancelled before it was sent")
            self._sock = sock

    def _detach(self) -> None:
        with self._lock:
            self._sock = None


@dataclass
class Response:
    """A successful answer: status, headers (lower-case names) and body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Transport:
    """Sends one request per connection to an address, with an optional token.

    A connection per request keeps the client thread-safe and lets a cancellation close exactly
    the connection of the request it cancels.
    """

    def __init__(self, address: Address, token: Optional[str], timeout: Optional[float]) -> None:
        self.address = address
        self._token = token
        self._timeout = timeout

    def _connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        address = self.address
        if address.scheme == "unix":
            return _UnixConnection(address.socket_path, timeout)
        if address.scheme == "https":
            return http.client.HTTPSConnection(
                address.host, address.port, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(address.host, address.port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        content_type: Optional[str] = None,
        cancel: Optional[Cancellation] = None,
        timeout: Optional[float] = None,
    ) -> Response:
        """Sends a request and returns the 2xx answer; raises SbxError for anything else."""
        with self._exchange(method, path, body, content_type, cancel, timeout) as (answer, _):
            return Response(answer.status, _headers_of(answer), answer.read())

    def request_lines(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        cancel: Optional[Cancellation] = None,
        timeout: Optional[float] = None,
    ) -> Iterator[bytes]:
        """Sends a request for NDJSON events and yields each line of the 2xx answer as it comes
        (an answer that is plain JSON, as a server without streaming sends, is one line)."""
        with self._exchange(method, path, body, None, cancel, timeout, _NDJSON) as (answer, fail):
            while True:
                try:
                    line = answer.readline()
                except (OSError, http.client.HTTPException) as error:
                    raise fail(error) from error
                if not line:
                    return
                if line.strip():
                    yield line

    @contextlib.contextmanager
    def _exchange(
        self,
        method: str,
        path: str,
        body: Optional[bytes],
        content_type: Optional[str],
        cancel: Optional[Cancellation],
        timeout: Optional[float],
        accept: str = "application/json",
    ) -> Iterator[tuple[http.client.HTTPResponse, Callable[[BaseException], SbxError]]]:
        """Sends the request and yields its 2xx answer (with what to raise for a transport error
        while reading it); raises SbxError for anything else. The connection closes after."""
        headers = {"Accept": accept}
        if self._token is not None:
            # Both headers: routers such as Kubernetes' agent-sandbox strip Authorization.
            headers["Authorization"] = f"Bearer {self._token}"
            headers["X-Sbx-Token"] = self._token
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"

        def fail(error: BaseException) -> SbxError:
            if cancel is not None and cancel.cancelled:
                return Cancelled("cancelled", f"{method} {path} was cancelled")
            return ConnectionFailed(
                "connection", f"{method} {path} to {self.address}: {error or type(error).__name__}"
            )

        connection = self._connect(timeout if timeout is not None else self._timeout)
        try:
            try:
                connection.connect()
                if cancel is not None:
                    cancel._attach(connection.sock)
                try:
                    connection.request(method, self.address.prefix + path, body=body, headers=headers)
                except (BrokenPipeError, ConnectionResetError):
                    # The server may answer (413, 401) and close before reading the whole body;
                    # its answer is then still waiting to be read.
                    if cancel is not None and cancel.cancelled:
                        raise
                answer = connection.getresponse()
                if not 200 <= answer.status < 300:
                    raise _error_of(Response(answer.status, _headers_of(answer), answer.read()))
            except (OSError, http.client.HTTPException) as error:
                raise fail(error) from error
            try:
                yield answer, fail
            except (OSError, http.client.HTTPException) as error:
                raise fail(error) from error
        finally:
            if cancel is not None:
                cancel._detach()
            connection.close()


_NDJSON = "application/x-ndjson"


def _headers_of(answer: http.client.HTTPResponse) -> dict[str, str]:
    return {k.lower(): v for k, v in answer.getheaders()}


def _error_of(response: Response) -> SbxError:
    """The exception for a non-2xx answer, from its ``{"error": {"code", "message"}}`` body."""
    code = _CODE_BY_STATUS.get(response.status, "internal")
    message = response.body.decode("utf-8", "replace").strip()
    try:
        error = json.loads(response.body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        pass
    exception = error_from_response(response.status, code, message)
    if isinstance(exception, LimitReached):
        try:
            exception.retry_after = float(response.headers.get("retry-after", ""))
        except ValueError:
            pass
    return exception
