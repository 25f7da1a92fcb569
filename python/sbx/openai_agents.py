"""A sandbox client for the OpenAI Agents SDK (``agents.sandbox``) backed by sbx sessions.

    from sbx.openai_agents import SbxSandboxClient, SbxSandboxClientOptions
    client = SbxSandboxClient()
    session = await client.create(options=SbxSandboxClientOptions())
    result = await session.exec("sh", "-lc", "echo hi")

When ``agents.sandbox`` is importable, the client and session subclass its BaseSandboxClient
and BaseSandboxSession and use its ExecResult and errors; otherwise this module defines
classes with the same names, signatures and result fields. Commands are passed to the server
as argv, unchanged (the SDK already wraps shell lines as ``sh -lc``). Paths are relative to the
workspace; a leading ``/workspace/`` (the workspace's path inside the sandbox) is accepted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
from typing import Any, Literal, Mapping, Optional, Union

from .client import Client, Session
from .errors import ConnectionFailed, NotFound

try:
    from agents.sandbox import (  # type: ignore
        BaseSandboxClient,
        BaseSandboxSession,
        ExecResult,
        ExecTimeoutError,
        ExecTransportError,
        WorkspaceReadNotFoundError,
    )
except ImportError:

    @dataclasses.dataclass
    class ExecResult:  # type: ignore[no-redef]
        """A command's outcome (the SDK's field names)."""

        stdout: bytes
        stderr: bytes
        exit_code: int

        def ok(self) -> bool:
            return self.exit_code == 0

    class ExecTimeoutError(Exception):  # type: ignore[no-redef]
        """A command ran past its timeout."""

    class ExecTransportError(Exception):  # type: ignore[no-redef]
        """The sandbox could not be reached."""

    class WorkspaceReadNotFoundError(FileNotFoundError):  # type: ignore[no-redef]
        """A file to read is not in the workspace."""

    class BaseSandboxSession:  # type: ignore[no-redef]
        """The SDK's session interface; exec() runs _exec_internal()."""

        async def exec(self, *command: str, timeout: Optional[float] = None) -> ExecResult:
            return await self._exec_internal(*command, timeout=timeout)

        async def _exec_internal(self, *command: str, timeout: Optional[float] = None) -> Any:
            raise NotImplementedError

    class BaseSandboxClient:  # type: ignore[no-redef]
        """The SDK's client interface (generic in its options type there)."""

        def __class_getitem__(cls, item: Any) -> type:
            return cls


_WORKSPACE_PREFIX = "/workspace/"


def _relative(path: Any) -> str:
    """A workspace-relative path from a relative one or one under /workspace/."""
    path = str(path)
    return path[len(_WORKSPACE_PREFIX) :] if path.startswith(_WORKSPACE_PREFIX) else path


def _bytes_of(data: Union[bytes, str, io.IOBase, Any]) -> bytes:
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return data.read()


@dataclasses.dataclass
class SbxSandboxClientOptions:
    """Options of an sbx sandbox: ``type`` names the backend, as the SDK's options do."""

    type: Literal["sbx"] = "sbx"
    policy: Optional[dict] = None
    policy_name: Optional[str] = None
    env: Optional[dict[str, str]] = None
    idle_timeout: Optional[float] = None


@dataclasses.dataclass
class SbxSandboxSessionState:
    """What resume() needs: the server's address and the session's id (JSON-serializable)."""

    session_id: str
    address: str
    type: Literal["sbx"] = "sbx"

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


class SbxSandboxSession(BaseSandboxSession):
    """One sbx session seen through the SDK's session interface."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.state = SbxSandboxSessionState(session.id, str(session.client.address))

    async def _exec_internal(self, *command: str, timeout: Optional[float] = None) -> ExecResult:
        if not command:
            raise ValueError("exec: expected a command, such as 'sh', '-lc', 'ls'")
        try:
            result = await asyncio.to_thread(self.session.exec, list(command), timeout=timeout)
        except ConnectionFailed as error:
            raise ExecTransportError(str(error)) from error
        if result.status == "timed_out":
            raise ExecTimeoutError(f"{command[0]}: timed out after {timeout} s")
        return ExecResult(
            stdout=result.stdout.encode(), stderr=result.stderr.encode(), exit_code=result.exit_code
        )

    async def read(self, path: Any, *, user: Optional[str] = None) -> io.IOBase:
        """The file's bytes as a binary stream; WorkspaceReadNotFoundError if missing."""
        try:
            data = await asyncio.to_thread(self.session.read_file, _relative(path))
        except NotFound as error:
            raise WorkspaceReadNotFoundError(str(path)) from error
        return io.BytesIO(data)

    async def write(self, path: Any, data: Any, *, user: Optional[str] = None) -> None:
        """Writes bytes, text or a binary stream to a workspace file."""
        await asyncio.to_thread(self.session.write_file, _relative(path), _bytes_of(data))

    async def running(self) -> bool:
        """Whether the server still holds the session."""
        try:
            await asyncio.to_thread(self.session.refresh)
            return True
        except (NotFound, ConnectionFailed):
            return False

    async def persist_workspace(self) -> io.IOBase:
        """The workspace as a tar stream with workspace-relative names."""
        return io.BytesIO(await asyncio.to_thread(self.session.persist_workspace))

    async def hydrate_workspace(self, data: Any) -> None:
        """Extracts a tar (bytes or a binary stream) into the workspace."""
        await asyncio.to_thread(self.session.hydrate_workspace, _bytes_of(data))


class SbxSandboxClient(BaseSandboxClient[SbxSandboxClientOptions]):
    """Creates, resumes and deletes sbx sessions for the Agents SDK.

    Args:
        client: the sbx.Client to use; default ``sbx.Client()`` ($SBX_URL or the default socket).
    """

    backend_id = "sbx"

    def __init__(self, client: Optional[Client] = None) -> None:
        self._client = client

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client()
        return self._client

    async def create(
        self,
        *,
        snapshot: Any = None,
        manifest: Optional[Mapping[str, Union[str, bytes]]] = None,
        options: Optional[SbxSandboxClientOptions] = None,
    ) -> SbxSandboxSession:
        """A new session; ``snapshot`` is a workspace tar to hydrate it with, ``manifest`` files to
        stage as ``{path: text or bytes}``."""
        options = options or SbxSandboxClientOptions()
        if options.type != "sbx":
            raise ValueError(f"options.type: expected 'sbx', got {options.type!r}")
        if manifest is not None and not isinstance(manifest, Mapping):
            raise TypeError("manifest: expected a mapping of workspace paths to text or bytes")
        session = await asyncio.to_thread(
            self.client.create_session,
            policy=options.policy,
            policy_name=options.policy_name,
            files=manifest,
            env=options.env,
            idle_timeout=options.idle_timeout,
        )
        sandbox = SbxSandboxSession(session)
        if snapshot is not None:
            await sandbox.hydrate_workspace(snapshot)
        return sandbox

    async def delete(self, session: SbxSandboxSession) -> None:
        """Ends the session and everything in it."""
        await asyncio.to_thread(session.session.close)

    async def resume(self, state: SbxSandboxSessionState) -> SbxSandboxSession:
        """The session ``state`` names, still held by the server (sbx.NotFound otherwise)."""
        client = self.client
        if str(client.address) != state.address:
            client = Client(state.address)
        return SbxSandboxSession(await asyncio.to_thread(client.get_session, state.session_id))

    def deserialize_session_state(self, payload: Mapping[str, Any]) -> SbxSandboxSessionState:
        """The state from its to_dict() form; ValueError naming a missing or wrong field."""
        if payload.get("type", "sbx") != "sbx":
            raise ValueError(f"type: expected 'sbx', got {payload.get('type')!r}")
        for name in ("session_id", "address"):
            if not isinstance(payload.get(name), str):
                raise ValueError(f"{name}: expected a string in the session state")
        return SbxSandboxSessionState(payload["session_id"], payload["address"])
