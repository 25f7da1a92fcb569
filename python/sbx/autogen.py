"""A code executor for AutoGen 0.4 (``autogen_core.code_executor``) that runs code in sbx.

    from sbx.autogen import SbxCodeExecutor
    async with SbxCodeExecutor() as executor:
        agent = CodeExecutorAgent("exec", code_executor=executor)

When ``autogen_core`` is importable, the executor subclasses its CodeExecutor and uses its
CodeBlock, CodeResult and CancellationToken; otherwise this module defines classes with the
same names, fields and methods. Each execution's blocking HTTP request runs in a thread; a
cancelled token (or a cancelled task) shuts that request's connection down, which the server
takes as a cancellation: it stops the execution, and the next one starts a fresh interpreter.
A cancelled execution returns exit code 1 with "Cancelled" in its output, as AutoGen's local
executor does.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Callable, Optional, Union

from ._adapter import SessionOwner, result_fields
from .client import Client, Session
from .errors import Cancelled
from .transport import Cancellation

try:
    from autogen_core import CancellationToken  # type: ignore
    from autogen_core.code_executor import CodeBlock, CodeExecutor, CodeResult  # type: ignore
except ImportError:

    class CancellationToken:  # type: ignore[no-redef]
        """Cancels pending work: callbacks run once, when cancel() is first called."""

        def __init__(self) -> None:
            self._cancelled = False
            self._callbacks: list[Callable[[], None]] = []

        def cancel(self) -> None:
            if self._cancelled:
                return
            self._cancelled = True
            for callback in self._callbacks:
                callback()

        def is_cancelled(self) -> bool:
            return self._cancelled

        def add_callback(self, callback: Callable[[], None]) -> None:
            if self._cancelled:
                callback()
            else:
                self._callbacks.append(callback)

        def link_future(self, future: "asyncio.Future[Any]") -> "asyncio.Future[Any]":
            self.add_callback(future.cancel)
            return future

    @dataclasses.dataclass
    class CodeBlock:  # type: ignore[no-redef]
        """A code block extracted from an agent message (AutoGen's field names)."""

        code: str
        language: str

    @dataclasses.dataclass
    class CodeResult:  # type: ignore[no-redef]
        """The result of a code execution (AutoGen's field names)."""

        exit_code: int
        output: str

    class CodeExecutor:  # type: ignore[no-redef]
        """AutoGen's executor interface: execute_code_blocks, start, stop, restart."""


try:
    from autogen_ext.code_executors._common import CommandLineCodeResult  # type: ignore
except ImportError:

    @dataclasses.dataclass
    class CommandLineCodeResult(CodeResult):  # type: ignore[no-redef]
        """A command-line executor's result: also the file the code was saved to, if any."""

        code_file: Optional[str] = None


class SbxCodeExecutor(SessionOwner, CodeExecutor):
    """Runs AutoGen code blocks in one sbx session (variables persist between executions).

    Args:
        timeout: seconds per execution.
        policy: an inline policy dict, or the name of a policy the server was given.
        client: the sbx.Client to use; default ``sbx.Client()`` ($SBX_URL or the default socket).
    """

    def __init__(
        self,
        timeout: int = 60,
        policy: Optional[Union[dict, str]] = None,
        client: Optional[Client] = None,
    ) -> None:
        super().__init__(timeout, policy, client)

    async def execute_code_blocks(
        self, code_blocks: list, cancellation_token: CancellationToken
    ) -> CommandLineCodeResult:
        """Runs the blocks in order, stopping at the first that fails."""
        if not code_blocks:
            return CommandLineCodeResult(exit_code=0, output="", code_file=None)
        session = await asyncio.to_thread(self._open_session)
        cancel = Cancellation()
        cancellation_token.add_callback(cancel.cancel)
        try:
            result = await asyncio.to_thread(
                session.execute, code_blocks, timeout=self.timeout, cancel=cancel
            )
        except Cancelled:
            return CommandLineCodeResult(exit_code=1, output="Cancelled", code_file=None)
        except asyncio.CancelledError:
            cancel.cancel()  # The awaiting task was cancelled: stop the request's thread too.
            raise
        exit_code, output = result_fields(result)
        return CommandLineCodeResult(exit_code=exit_code, output=output, code_file=None)

    async def start(self) -> None:
        """Creates the sbx session."""
        await asyncio.to_thread(self._open_session)

    async def stop(self) -> None:
        """Ends the sbx session."""
        if self._session is not None:
            session, self._session = self._session, None
            await asyncio.to_thread(session.close)

    async def restart(self) -> None:
        """A fresh interpreter; the workspace's files stay."""
        if self._session is not None:
            await asyncio.to_thread(self._session.restart)

    @property
    def session(self) -> Optional[Session]:
        """The sbx session, once started."""
        return self._session

    async def __aenter__(self) -> "SbxCodeExecutor":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop()
