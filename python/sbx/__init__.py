"""sbx: run untrusted code in sbx sandboxes from Python, through an ``sbx serve`` server.

    import sbx
    with sbx.Client() as client, client.session() as session:
        print(session.execute("print(2**10)").output)

Adapters for agent frameworks live in ``sbx.ag2``, ``sbx.autogen`` and ``sbx.openai_agents``.
"""

from .client import Client, Session
from .errors import (
    Cancelled,
    Conflict,
    ConnectionFailed,
    InternalError,
    InvalidPath,
    InvalidRequest,
    LimitReached,
    MethodNotAllowed,
    NotFound,
    PermissionDenied,
    SbxError,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from .results import ExecResult, ExecuteResult, ExecutionError, Image, SessionInfo
from .transport import Cancellation

__version__ = "0.1.0"

__all__ = [
    "Cancellation",
    "Cancelled",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "ExecResult",
    "ExecuteResult",
    "ExecutionError",
    "Image",
    "InternalError",
    "InvalidPath",
    "InvalidRequest",
    "LimitReached",
    "MethodNotAllowed",
    "NotFound",
    "PermissionDenied",
    "SbxError",
    "Session",
    "SessionInfo",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
]
