"""sbx.openai_agents against the real server: create, exec, files, snapshots, resume."""

from __future__ import annotations

import asyncio
import inspect
import io
import tarfile

import pytest

from sbx.openai_agents import (
    ExecResult,
    ExecTimeoutError,
    SbxSandboxClient,
    SbxSandboxClientOptions,
    SbxSandboxSession,
    WorkspaceReadNotFoundError,
)


def run(coroutine):
    return asyncio.run(coroutine)


def test_signatures_match_the_sdk():
    create = inspect.signature(SbxSandboxClient.create).parameters
    assert [(n, p.kind.name) for n, p in create.items()][1:] == [
        ("snapshot", "KEYWORD_ONLY"), ("manifest", "KEYWORD_ONLY"), ("options", "KEYWORD_ONLY")]
    assert SbxSandboxClientOptions().type == "sbx"
    assert list(inspect.signature(SbxSandboxSession._exec_internal).parameters) == [
        "self", "command", "timeout"]
    assert [f for f in ExecResult.__dataclass_fields__] == ["stdout", "stderr", "exit_code"]


def test_exec_read_write_and_delete(client):
    async def main():
        sandboxes = SbxSandboxClient(client)
        session = await sandboxes.create(manifest={"in.txt": "staged"},
                                         options=SbxSandboxClientOptions())
        result = await session.exec("sh", "-lc", "cat in.txt; echo err >&2; exit 3")
        await session.write("/workspace/out/new.bin", io.BytesIO(b"\x00new"))
        read_back = (await session.read("out/new.bin")).read()
        with pytest.raises(WorkspaceReadNotFoundError):
            await session.read("missing.txt")
        running = await session.running()
        await sandboxes.delete(session)
        return result, read_back, running, await session.running()

    result, read_back, running_before, running_after = run(main())
    assert result == ExecResult(stdout=b"staged", stderr=b"err\n", exit_code=3)
    assert read_back == b"\x00new"
    assert running_before and not running_after


def test_exec_timeout_raises_exec_timeout_error(client):
    async def main():
        sandboxes = SbxSandboxClient(client)
        session = await sandboxes.create(options=SbxSandboxClientOptions())
        try:
            with pytest.raises(ExecTimeoutError):
                await session.exec("sleep", "30", timeout=1)
        finally:
            await sandboxes.delete(session)

    run(main())


def test_snapshot_hydrates_a_new_session(client):
    async def main():
        sandboxes = SbxSandboxClient(client)
        first = await sandboxes.create(options=SbxSandboxClientOptions())
        await first.write("keep/me.txt", b"persisted")
        archive = (await first.persist_workspace()).read()
        second = await sandboxes.create(snapshot=io.BytesIO(archive),
                                        options=SbxSandboxClientOptions())
        content = (await second.read("keep/me.txt")).read()
        await sandboxes.delete(first)
        await sandboxes.delete(second)
        return archive, content

    archive, content = run(main())
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert "keep/me.txt" in [n.removeprefix("./") for n in tar.getnames()]
    assert content == b"persisted"


def test_state_round_trip_resumes_the_same_session(client):
    async def main():
        sandboxes = SbxSandboxClient(client)
        session = await sandboxes.create(options=SbxSandboxClientOptions())
        await session.write("mark.txt", "here")
        state = sandboxes.deserialize_session_state(session.state.to_dict())
        resumed = await sandboxes.resume(state)
        content = (await resumed.read("mark.txt")).read()
        await sandboxes.delete(resumed)
        return state, session, content

    state, session, content = run(main())
    assert state.session_id == session.session.id and content == b"here"
    with pytest.raises(ValueError):
        SbxSandboxClient(client).deserialize_session_state({"type": "docker"})
