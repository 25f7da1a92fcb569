"""The exceptions the sbx client raises: one class per error code of the server's API."""

from __future__ import annotations

from typing import Optional


class SbxError(Exception):
    """An error the server answered with, or a failure to reach it.

    Attributes:
        code: the server's error code (``not_found``, ``invalid``, ...), or ``connection``
            when the server could not be reached, ``cancelled`` when the caller cancelled.
        message: the server's message, which names the field and the fix.
        status: the HTTP status, or None when there was no HTTP response.
    """

    code = "error"

    def __init__(self, code: str, message: str, status: Optional[int] = None) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class InvalidRequest(SbxError):
    """400 ``invalid``: malformed JSON, an unknown or mistyped field."""


class InvalidPath(InvalidRequest):
    """400 ``invalid_path``: a file path that is absolute, has ``..``, NUL or is too deep."""


class Unauthorized(SbxError):
    """401 ``unauthorized``: a missing or wrong token."""


class PermissionDenied(SbxError):
    """403 ``permission_denied``: a peer that may not connect, or a looser policy than the
    server's."""


class NotFound(SbxError):
    """404 ``not_found``: an unknown route, session or file."""


class MethodNotAllowed(SbxError):
    """405 ``method_not_allowed``: a known route with another method."""


class Conflict(SbxError):
    """409 ``conflict``: hydrating over an existing file, or the session is closing."""


class TooLarge(SbxError):
    """413 ``too_large``: a body or header above the server's limits."""


class LimitReached(SbxError):
    """429 ``limit``: ``--max-sessions`` reached; ``retry_after`` is the server's hint, in
    seconds."""

    retry_after: Optional[float] = None


class Unavailable(SbxError):
    """503 ``unavailable``: the server is draining, or a session could not be started."""


class InternalError(SbxError):
    """500 ``internal``: sbx could not do what it should have."""


class ConnectionFailed(SbxError):
    """The server could not be reached, or it closed the connection without an answer."""


class Cancelled(SbxError):
    """The caller cancelled a request; the server stops an execution whose client went away."""


_BY_CODE = {
    "invalid": InvalidRequest,
    "invalid_path": InvalidPath,
    "unauthorized": Unauthorized,
    "permission_denied": PermissionDenied,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "conflict": Conflict,
    "too_large": TooLarge,
    "limit": LimitReached,
    "unavailable": Unavailable,
    "internal": InternalError,
}


def error_from_response(status: int, code: str, message: str) -> SbxError:
    """The exception for an error answer: the class for ``code``, SbxError for unknown codes."""
    return _BY_CODE.get(code, SbxError)(code, message, status)
