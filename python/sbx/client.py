"""The sbx client: a Client for one server, and the Sessions it creates."""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

from .errors import ConnectionFailed, NotFound, error_from_response
from .results import ExecResult, ExecuteResult, SessionInfo
from .transport import Address, Cancellation, Transport, default_address

# How much longer than an execution's own timeout the client waits for the server's answer.
_ANSWER_SLACK_SECONDS = 60.0

CodeBlocks = Union[str, Iterable[Any]]


def _block_json(block: Any, language: str) -> dict[str, str]:
    """One code block as the API wants it, from a dict, a (language, code) pair or an object
    with ``code`` and ``language`` attributes (AutoGen's and AG2's CodeBlock)."""
    if isinstance(block, str):
        return {"language": language, "code": block}
    if isinstance(block, Mapping):
        return {"language": block.get("language", language), "code": block["code"]}
    if isinstance(block, tuple) and len(block) == 2:
        return {"language": block[0], "code": block[1]}
    return {"language": getattr(block, "language", None) or language, "code": block.code}


def _execute_json(code_blocks: CodeBlocks, language: str, timeout: Optional[float]) -> dict:
    """The body of an execute request."""
    blocks = [code_blocks] if isinstance(code_blocks, str) else list(code_blocks)
    payload: dict[str, Any] = {"code_blocks": [_block_json(b, language) for b in blocks]}
    if timeout is not None:
        payload["timeout"] = timeout
    return payload


def _files_json(files: Union[Mapping[str, Union[str, bytes]], Sequence[dict]]) -> list[dict]:
    """Files to stage: ``{path: text or bytes}``, or the API's own list of file objects."""
    if not isinstance(files, Mapping):
        return list(files)
    staged = []
    for path, content in files.items():
        if isinstance(content, bytes):
            staged.append({"path": path, "content_base64": base64.b64encode(content).decode()})
        else:
            staged.append({"path": path, "content": content})
    return staged


class Session:
    """A sandboxed session on the server: a stateful interpreter and a workspace.

    Use it as a context manager, or call close(); the server also ends it after its idle timeout.
    """

    def __init__(self, client: "Client", info: SessionInfo) -> None:
        self.client = client
        self.info = info
        self.id = info.id
        self._closed = False

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def _path(self, suffix: str = "") -> str:
        return f"/v1/sessions/{urllib.parse.quote(self.id, safe='')}{suffix}"

    def _post(self, suffix: str, payload: dict, **kwargs: Any) -> Any:
        body = json.dumps(payload).encode()
        return self.client._transport.request("POST", self._path(suffix), body, **kwargs).json()

    def refresh(self) -> SessionInfo:
        """The session's current state from the server."""
        self.info = SessionInfo.from_json(self.client._get_json(self._path()))
        return self.info

    def execute(
        self,
        code_blocks: CodeBlocks,
        language: str = "python",
        timeout: Optional[float] = None,
        cancel: Optional[Cancellation] = None,
        on_output: Optional[Callable[[str, str], None]] = None,
    ) -> ExecuteResult:
        """Runs code blocks in order in the session's interpreter; variables persist.

        ``code_blocks`` is a code string (in ``language``) or a list of blocks: dicts, AutoGen
        CodeBlocks or ``(language, code)`` pairs. ``cancel`` can stop the execution from another
        thread (it then raises Cancelled). A non-zero exit of the code is a result, not an error.
        ``on_output(stream, text)``, with ``stream`` "stdout" or "stderr", is called with the
        output as the code writes it (the server streams NDJSON events); the result still holds
        all of it. An exception it raises stops the execution and is raised here.
        """
        payload = _execute_json(code_blocks, language, timeout)
        wait = None if timeout is None else timeout + _ANSWER_SLACK_SECONDS
        if on_output is None:
            return ExecuteResult.from_json(self._post("/execute", payload, cancel=cancel, timeout=wait))
        return ExecuteResult.from_json(self._streamed("/execute", payload, timeout, cancel, on_output))

    def execute_events(
        self,
        code_blocks: CodeBlocks,
        language: str = "python",
        timeout: Optional[float] = None,
        cancel: Optional[Cancellation] = None,
    ) -> Iterator[dict[str, Any]]:
        """Runs code blocks as execute() does and yields the server's events as they come:
        ``{"type": "stdout" | "stderr", "text"}``, ``{"type": "keepalive"}`` during a long
        silence, and last ``{"type": "result", "result": {...}}`` (the JSON of an
        ExecuteResult). An error event is raised as the SbxError it names. Closing the iterator
        early cancels the execution."""
        return self._events("/execute", _execute_json(code_blocks, language, timeout), timeout, cancel)

    def _events(
        self, suffix: str, payload: dict, timeout: Optional[float], cancel: Optional[Cancellation]
    ) -> Iterator[dict[str, Any]]:
        # Keepalives come after 15 s of silence, so a read waits at most this long.
        wait = None if timeout is None else max(timeout + _ANSWER_SLACK_SECONDS, 60.0)
        lines = self.client._transport.request_lines(
            "POST", self._path(suffix), json.dumps(payload).encode(), cancel=cancel, timeout=wait
        )
        try:
            for line in lines:
                event = json.loads(line)
                if "type" not in event:  # a server that answers with the plain result
                    yield {"type": "result", "result": event}
                    return
                if event["type"] == "error":
                    error = event.get("error", {})
                    raise error_from_response(
                        int(event.get("status", 500)),
                        str(error.get("code", "internal")),
                        str(error.get("message", "")),
                    )
                yield event
        finally:
            lines.close()  # the connection: closing it early cancels the execution

    def _streamed(
        self,
        suffix: str,
        payload: dict,
        timeout: Optional[float],
        cancel: Optional[Cancellation],
        on_output: Callable[[str, str], None],
    ) -> Any:
        """The result's JSON of a streamed request, handing output events to ``on_output``."""
        events = self._events(suffix, payload, timeout, cancel)
        try:
            for event in events:
                if event["type"] in ("stdout", "stderr"):
                    on_output(event["type"], event["text"])
                elif event["type"] == "result":
                    return event["result"]
        finally:
            events.close()  # an exception from on_output closes the connection: cancelled
        raise ConnectionFailed("connection", "the server's event stream ended without a result")

    def exec(
        self,
        argv: Optional[Sequence[str]] = None,
        *,
        shell: Optional[str] = None,
        stdin: Optional[Union[str, bytes]] = None,
        timeout: Optional[float] = None,
        on_output: Optional[Callable[[str, str], None]] = None,
    ) -> ExecResult:
        """Runs a command (``argv``, or a ``shell`` line) in the session's sandbox and workspace,
        without the interpreter's state. ``stdin`` is text or bytes. ``on_output`` as for
        execute()."""
        if (argv is None) == (shell is None):
            raise ValueError("exec: give exactly one of argv (a list of strings) or shell=")
        payload: dict[str, Any] = {"argv": list(argv)} if argv is not None else {"shell": shell}
        if isinstance(stdin, bytes):
            payload["stdin_base64"] = base64.b64encode(stdin).decode()
        elif stdin is not None:
            payload["stdin"] = stdin
        if timeout is not None:
            payload["timeout"] = timeout
        if on_output is not None:
            return ExecResult.from_json(self._streamed("/exec", payload, timeout, None, on_output))
        wait = None if timeout is None else timeout + _ANSWER_SLACK_SECONDS
        return ExecResult.from_json(self._post("/exec", payload, timeout=wait))

    def _file_path(self, path: str) -> str:
        return self._path("/files/" + urllib.parse.quote(path, safe="/"))

    def read_file(self, path: str) -> bytes:
        """A workspace file's bytes (``path`` relative to the workspace; symlinks are 404)."""
        return self.client._transport.request("GET", self._file_path(path)).body

    def write_file(self, path: str, data: Union[bytes, str]) -> dict:
        """Writes a workspace file, creating parent directories; returns ``{"path", "size"}``."""
        body = data.encode() if isinstance(data, str) else bytes(data)
        answer = self.client._transport.request(
            "PUT", self._file_path(path), body, "application/octet-stream"
        )
        return answer.json()

    def persist_workspace(self) -> bytes:
        """The workspace as a tar (regular files and directories, workspace-relative names).

        The server ends the running interpreter first, so the next execution starts fresh.
        """
        return self.client._transport.request("GET", self._path("/workspace")).body

    def hydrate_workspace(self, data: Union[bytes, IO[bytes]]) -> None:
        """Extracts a tar (bytes or a binary file object) into the workspace; an existing file
        is a Conflict."""
        body = data if isinstance(data, (bytes, bytearray)) else data.read()
        self.client._transport.request(
            "PUT", self._path("/workspace"), bytes(body), "application/x-tar"
        )

    def restart(self) -> SessionInfo:
        """A fresh interpreter; the workspace's files stay."""
        self.info = SessionInfo.from_json(self._post("/restart", {}))
        return self.info

    def close(self) -> None:
        """Ends the session: its processes, cgroup and workspace are gone when this returns."""
        if self._closed:
            return
        self._closed = True
        try:
            self.client._transport.request("DELETE", self._path())
        except NotFound:
            pass  # Already ended, e.g. by its idle timeout.


class Client:
    """A client of one sbx server.

    ``address`` is ``unix:PATH`` or ``http(s)://HOST:PORT``; without one, ``$SBX_URL`` and
    ``$SBX_TOKEN`` are used, else the default socket (``/run/sbx/sbx.sock`` as root, else
    ``$XDG_RUNTIME_DIR/sbx.sock``). ``timeout`` bounds each wait for the server, in seconds.
    """

    def __init__(
        self,
        address: Optional[str] = None,
        token: Optional[str] = None,
        timeout: Optional[float] = 600.0,
    ) -> None:
        if address is None:
            address = default_address()
            token = token if token is not None else os.environ.get("SBX_TOKEN")
        self.address = Address.parse(address)
        self._transport = Transport(self.address, token, timeout)
        self._server: Any = None  # The child server of Client.local(), if any.

    @classmethod
    def local(cls, sbx_binary: Optional[str] = None, extra_args: Sequence[str] = ()) -> "Client":
        """Starts ``sbx serve`` as a child on a private socket and returns its client.

        The binary is ``sbx_binary``, else ``$SBX_BIN``, else ``sbx`` on PATH. The server stops
        at close() or when Python exits.
        """
        from .local import LocalServer

        server = LocalServer.start(sbx_binary, extra_args)
        client = cls(server.address)
        client._server = server
        return client

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stops the server if Client.local() started it; otherwise nothing to release."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def _get_json(self, path: str) -> Any:
        return self._transport.request("GET", path).json()

    def health(self) -> dict:
        """The server's status, version, session counts, pool and enforcement."""
        return self._get_json("/v1/health")

    def metrics(self) -> str:
        """The server's metrics in Prometheus text format."""
        return self._transport.request("GET", "/metrics").body.decode()

    def create_session(
        self,
        policy: Optional[dict] = None,
        policy_name: Optional[str] = None,
        files: Optional[Union[Mapping[str, Union[str, bytes]], Sequence[dict]]] = None,
        env: Optional[Mapping[str, str]] = None,
        idle_timeout: Optional[float] = None,
        image: Optional[str] = None,
    ) -> Session:
        """A new session. ``policy`` (inline, may only tighten the server's) or ``policy_name``
        (one of the server's ``--policy-dir``); ``files`` staged into the workspace as
        ``{path: text or bytes}``; ``env`` added to the sandbox's environment; ``image`` an image
        variant's name (``sbx image ls``), the same as the inline policy's ``"image"``."""
        if image is not None:
            if policy_name is not None:
                raise ValueError("image: a --policy-dir policy names its own image; give policy= "
                                 "instead of policy_name= to choose one")
            policy = {**(policy or {}), "image": image}
        payload: dict[str, Any] = {}
        if policy is not None:
            payload["policy"] = policy
        if policy_name is not None:
            payload["policy_name"] = policy_name
        if files is not None:
            payload["files"] = _files_json(files)
        if env is not None:
            payload["env"] = dict(env)
        if idle_timeout is not None:
            payload["idle_timeout"] = idle_timeout
        answer = self._transport.request("POST", "/v1/sessions", json.dumps(payload).encode())
        return Session(self, SessionInfo.from_json(answer.json()))

    def session(self, **options: Any) -> Session:
        """Same as create_session(**options); reads well in ``with client.session() as s:``."""
        return self.create_session(**options)

    def get_session(self, session_id: str) -> Session:
        """An existing session by id (NotFound if the server does not know it)."""
        path = f"/v1/sessions/{urllib.parse.quote(session_id, safe='')}"
        return Session(self, SessionInfo.from_json(self._get_json(path)))

    def sessions(self) -> list[SessionInfo]:
        """Every session the server holds."""
        return [SessionInfo.from_json(s) for s in self._get_json("/v1/sessions")["sessions"]]

