"""A code executor for AG2 and AutoGen 0.2 (``autogen.coding``) that runs code in sbx.

    from sbx.ag2 import SbxCodeExecutor
    agent = ConversableAgent("executor", code_execution_config={"executor": SbxCodeExecutor()})

When ``autogen`` is importable, CodeBlock and CommandLineCodeResult are its own classes;
otherwise this module defines classes with the same names and fields (AG2's ``CodeExecutor``
is a runtime-checkable protocol, so the executor needs no base class).

Files: the code runs in the session's workspace inside the sandbox, not in ``work_dir``. When
``work_dir`` is given, every file an execution changed is copied into it afterwards (regular
files only, never through a symlink, never outside ``work_dir``), so code that writes
``primes.txt`` leaves ``work_dir/primes.txt`` as AG2's local executor would. ``download()``
copies one file on demand. ``code_file`` is always None: the code is not written to a file.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Any, Optional, Union

from ._adapter import SessionOwner, result_fields
from ._localfiles import write_under
from .client import Client, Session
from .errors import NotFound, SbxError

try:
    from autogen.coding.base import CodeBlock, CommandLineCodeResult  # type: ignore
except ImportError:

    @dataclasses.dataclass
    class CodeBlock:  # type: ignore[no-redef]
        """A code block extracted from an agent message (AG2's field names)."""

        code: str
        language: str

    @dataclasses.dataclass
    class CodeResult:
        """The result of a code execution (AG2's field names)."""

        exit_code: int
        output: str

    @dataclasses.dataclass
    class CommandLineCodeResult(CodeResult):  # type: ignore[no-redef]
        """A command-line executor's result: also the file the code was saved to, if any."""

        code_file: Optional[str] = None


# A fenced block: ```lang, a newline, the code, a newline and ``` (AG2's shape).
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\r?\n(.*?)\r?\n[ \t]*```", re.DOTALL)
_LANGUAGES = {"": "python", "python": "python", "py": "python", "python3": "python",
              "bash": "bash", "sh": "sh", "shell": "sh"}


class SbxMarkdownCodeExtractor:
    """Finds fenced ```python / ```py / ```bash / ```sh blocks (untagged ones are Python) in a
    message; blocks in other languages are left out, since sbx cannot run them."""

    def extract_code_blocks(self, message: Union[str, list, None]) -> list:
        if message is None:
            return []
        if not isinstance(message, str):  # Multimodal content: the text parts.
            message = "\n".join(
                part.get("text", "") for part in message
                if isinstance(part, dict) and part.get("type") == "text"
            )
        blocks = []
        for tag, code in _FENCE.findall(message):
            language = _LANGUAGES.get(tag.lower())
            if language is not None:
                blocks.append(CodeBlock(code=code, language=language))
        return blocks


class SbxCodeExecutor(SessionOwner):
    """Runs AG2 code blocks in one sbx session (variables persist between executions).

    Args:
        work_dir: a local directory that receives the files each execution changes (see the
            module docstring); None keeps files in the sandbox only.
        timeout: seconds per execution.
        policy: an inline policy dict, or the name of a policy the server was given.
        client: the sbx.Client to use; default ``sbx.Client()`` ($SBX_URL or the default socket).
    """

    def __init__(
        self,
        work_dir: Optional[str] = None,
        timeout: int = 60,
        policy: Optional[Union[dict, str]] = None,
        client: Optional[Client] = None,
    ) -> None:
        super().__init__(timeout, policy, client)
        self.work_dir = work_dir
        self._extractor = SbxMarkdownCodeExtractor()

    @property
    def code_extractor(self) -> SbxMarkdownCodeExtractor:
        """The extractor AG2 uses to find code in a message."""
        return self._extractor

    @property
    def session(self) -> Session:
        """The sbx session, created on first use."""
        return self._open_session()

    def execute_code_blocks(self, code_blocks: list) -> CommandLineCodeResult:
        """Runs the blocks in order, stopping at the first that fails."""
        if not code_blocks:
            return CommandLineCodeResult(exit_code=0, output="", code_file=None)
        result = self.session.execute(code_blocks, timeout=self.timeout)
        if self.work_dir is not None:
            for path in result.changed_paths():
                self._copy_out(path)
        exit_code, output = result_fields(result)
        return CommandLineCodeResult(exit_code=exit_code, output=output, code_file=None)

    def download(self, path: str, dest_dir: Optional[str] = None) -> str:
        """Copies a workspace file into ``dest_dir`` (default ``work_dir``); returns the copy."""
        directory = dest_dir or self.work_dir
        if directory is None:
            raise ValueError("download: pass dest_dir= or create the executor with work_dir=")
        return write_under(directory, path, self.session.read_file(path))

    def _copy_out(self, path: str) -> None:
        try:
            self.download(path)
        except NotFound:
            pass  # Deleted by the code, or not a regular file.
        except (OSError, ValueError, SbxError) as error:
            warnings.warn(f"sbx: {path} not copied to {self.work_dir}: {error}", stacklevel=3)

    def restart(self) -> None:
        """A fresh interpreter; the workspace's files stay."""
        if self._session is not None:
            self._session.restart()

    def close(self) -> None:
        """Ends the sbx session."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> "SbxCodeExecutor":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
