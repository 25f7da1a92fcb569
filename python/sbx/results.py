"""The typed results of the server's routes: sessions, executions and commands."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that are fields of ``cls``; newer servers may add others."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {key: value for key, value in data.items() if key in names}


@dataclass
class SessionInfo:
    """A session as the server describes it (``POST /v1/sessions``, ``GET .../{id}``)."""

    id: str
    created: float = 0
    last_used: float = 0
    executions: int = 0
    busy: bool = False
    requests: int = 0  # the requests holding the session or waiting for their turn
    pooled: bool = False
    idle_timeout: Optional[float] = None
    network: Any = None
    image: Optional[str] = None  # the variant the session's policy named; None: the server's

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SessionInfo":
        return cls(**_known_fields(cls, data))


@dataclass
class ExecutionError:
    """The exception that ended an execution, as Python reported it."""

    type: str = ""
    message: str = ""
    traceback: str = ""


@dataclass
class Image:
    """A figure the code produced: its workspace path and the PNG bytes in base64."""

    path: str = ""
    png_base64: str = ""


@dataclass
class ExecuteResult:
    """The result of ``POST /v1/sessions/{id}/execute``: the executor's CodeResult.

    A non-zero ``exit_code`` is the code's own failure, not an error of sbx. ``status`` says how
    the execution ended: ``exited``, ``timed_out``, ``oom_killed``, ``pids_limit``, ``signaled``,
    ``seccomp_violation`` or ``cancelled``. ``raw`` keeps the whole JSON answer.
    """

    status: str = ""
    exit_code: int = 0
    output: str = ""
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    output_truncated: bool = False
    value: Any = None
    error: Optional[ExecutionError] = None
    wall_ms: float = 0
    cpu_ms: float = 0
    peak_memory_bytes: int = 0
    blocks_run: int = 0
    files_changed: list[Any] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    state_lost: bool = False
    notice: Any = None
    rejected: Any = None
    network: Any = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ExecuteResult":
        values = _known_fields(cls, data)
        if isinstance(values.get("error"), dict):
            values["error"] = ExecutionError(**_known_fields(ExecutionError, values["error"]))
        values["images"] = [
            Image(**_known_fields(Image, image)) for image in values.get("images") or []
        ]
        values["files_changed"] = list(values.get("files_changed") or [])
        return cls(**values, raw=data)

    def changed_paths(self) -> list[str]:
        """The workspace-relative paths in ``files_changed`` (entries are paths or objects)."""
        paths = []
        for entry in self.files_changed:
            path = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(path, str):
                paths.append(path)
        return paths


@dataclass
class ExecResult:
    """The result of ``POST /v1/sessions/{id}/exec``: a command run in the session's sandbox.

    ``exit_code`` is 127 when the program was not found and 124 on timeout.
    """

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    status: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_ms: float = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ExecResult":
        return cls(**_known_fields(cls, data))
