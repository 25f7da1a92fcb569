"""What the framework adapters share: opening their session and mapping a result."""

from __future__ import annotations

from typing import Optional, Union

from .client import Client, Session
from .results import ExecuteResult


class SessionOwner:
    """An executor's sbx session, created on first use with the executor's policy.

    ``policy`` is an inline policy dict or the name of a policy the server was given with
    --policy-dir; ``client`` defaults to ``Client()`` ($SBX_URL or the default socket).
    """

    def __init__(
        self, timeout: float, policy: Optional[Union[dict, str]], client: Optional[Client]
    ) -> None:
        if timeout < 1:
            raise ValueError(f"timeout: expected at least 1 second, got {timeout!r}")
        self.timeout = timeout
        self.policy = policy
        self._client = client
        self._session: Optional[Session] = None

    def _open_session(self) -> Session:
        if self._session is None:
            self._client = self._client or Client()
            if isinstance(self.policy, str):
                self._session = self._client.create_session(policy_name=self.policy)
            else:
                self._session = self._client.create_session(policy=self.policy)
        return self._session


def result_fields(result: ExecuteResult) -> tuple[int, str]:
    """(exit code, output) for a framework result: the code's own, plus how it ended if it did
    not simply exit (a timeout gets exit code 124 as AutoGen's executors report it)."""
    output = result.output
    exit_code = result.exit_code
    if result.status and result.status != "exited":
        output += f"\n[sbx: execution {result.status.replace('_', ' ')}]"
        if exit_code == 0:
            exit_code = 124 if result.status == "timed_out" else 1
    return exit_code, output
