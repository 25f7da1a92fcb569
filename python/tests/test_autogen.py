"""sbx.autogen.SbxCodeExecutor against the real server: the seed task and cancellation."""

from __future__ import annotations

import asyncio
import inspect
import time

from sbx.autogen import CancellationToken, CodeBlock, CommandLineCodeResult, SbxCodeExecutor

SLEEP = CodeBlock(code="import time\ntime.sleep(30)\nprint('finished')", language="python")


def run(coroutine):
    return asyncio.run(coroutine)


def test_signatures_match_autogen():
    parameters = inspect.signature(SbxCodeExecutor.execute_code_blocks).parameters
    assert list(parameters) == ["self", "code_blocks", "cancellation_token"]
    for name in ("execute_code_blocks", "start", "stop", "restart"):
        assert inspect.iscoroutinefunction(getattr(SbxCodeExecutor, name))


def test_seed_task_prints_1024(client):
    async def main():
        async with SbxCodeExecutor(client=client) as executor:
            return await executor.execute_code_blocks(
                [CodeBlock(code="print(2**10)", language="python")], CancellationToken())

    result = run(main())
    assert isinstance(result, CommandLineCodeResult)
    assert result.exit_code == 0 and "1024" in result.output


def test_primes_file_stays_in_the_workspace(client):
    from test_ag2 import PRIMES, PRIMES_TEXT

    async def main():
        async with SbxCodeExecutor(client=client) as executor:
            result = await executor.execute_code_blocks(
                [CodeBlock(code=PRIMES, language="python")], CancellationToken())
            return result, executor.session.read_file("primes.txt")

    result, primes = run(main())
    assert result.exit_code == 0 and primes == PRIMES_TEXT


def test_cancelling_the_token_stops_the_execution(client):
    async def main():
        async with SbxCodeExecutor(client=client) as executor:
            token = CancellationToken()
            asyncio.get_running_loop().call_later(1.0, token.cancel)
            started = time.monotonic()
            cancelled = await executor.execute_code_blocks([SLEEP], token)
            elapsed = time.monotonic() - started
            after = await executor.execute_code_blocks(
                [CodeBlock(code="print('next')", language="python")], CancellationToken())
            return cancelled, elapsed, after

    cancelled, elapsed, after = run(main())
    assert cancelled.exit_code == 1 and "Cancelled" in cancelled.output
    assert elapsed < 10
    assert after.exit_code == 0 and "next" in after.output


def test_cancelling_the_task_stops_the_execution(client):
    async def main():
        async with SbxCodeExecutor(client=client) as executor:
            task = asyncio.create_task(executor.execute_code_blocks([SLEEP], CancellationToken()))
            await asyncio.sleep(1.0)
            task.cancel()
            started = time.monotonic()
            try:
                await task
            except asyncio.CancelledError:
                pass
            # The next execution waits for the cancelled one: it must not take the 30 s.
            after = await executor.execute_code_blocks(
                [CodeBlock(code="print('next')", language="python")], CancellationToken())
            return time.monotonic() - started, after

    elapsed, after = run(main())
    assert elapsed < 10, after
    assert after.exit_code == 0 and "next" in after.output


def test_restart_and_stop(client):
    async def main():
        executor = SbxCodeExecutor(client=client)
        await executor.start()
        token = CancellationToken()
        await executor.execute_code_blocks([CodeBlock("w = 3", "python")], token)
        await executor.restart()
        result = await executor.execute_code_blocks([CodeBlock("print(w)", "python")], token)
        session_id = executor.session.id
        await executor.stop()
        return result, session_id

    result, session_id = run(main())
    assert result.exit_code != 0 and "NameError" in result.output
    assert session_id not in [s.id for s in client.sessions()]
